// The codebook screens. No inline scripts anywhere (CSP: script-src 'self').
(function () {
  "use strict";

  // Form errors come back with status 422 (docs/codebook.md): let htmx swap them like a 200.
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.xhr && event.detail.xhr.status === 422) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });

  // Highlight the category whose panel is open.
  document.addEventListener("click", function (event) {
    var link = event.target instanceof Element ? event.target.closest(".category-tree .category-link") : null;
    if (!link) { return; }
    document.querySelectorAll(".category-tree li.is-selected").forEach(function (li) { li.classList.remove("is-selected"); });
    var row = link.closest("li");
    if (row) { row.classList.add("is-selected"); }
  });

  // Suggest a key from the name while the key field is untouched: "Hang & Timeout" -> "hang-timeout".
  function slugify(text) {
    return text.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").toLowerCase()
      .replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 100);
  }
  document.addEventListener("input", function (event) {
    var input = event.target;
    if (!(input instanceof HTMLInputElement)) { return; }
    var form = input.closest("form[data-key-from-name]");
    if (!form) { return; }
    var match = /^(.*)name$/.exec(input.name);
    if (match) {
      var key = form.querySelector('input[name="' + match[1] + 'key"]');
      if (key && !key.dataset.touched) { key.value = slugify(input.value); }
    } else if (/key$/.test(input.name)) {
      input.dataset.touched = input.value ? "1" : "";
    }
  });

  // "Select all" checkboxes on the reassign page: <input type=checkbox data-check-all="label">.
  document.addEventListener("change", function (event) {
    var box = event.target;
    if (!(box instanceof HTMLInputElement) || !box.dataset.checkAll) { return; }
    var form = box.closest("form");
    if (!form) { return; }
    form.querySelectorAll('input[type=checkbox][name="' + box.dataset.checkAll + '"]').forEach(function (other) {
      other.checked = box.checked;
    });
  });
})();
