// Adjudication pages: keyboard navigation of the queue, Ctrl+Enter to save a decision, and letting htmx
// show the decision form re-rendered with a 409 (conflict) or 422 (refused) status. CSP: no inline code.
(function () {
  "use strict";

  function typing(target) {
    return target instanceof HTMLElement &&
      (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  // --- The queue: j / k move between rows, Enter opens the current one. ---
  var current = -1;
  function rows() {
    var list = document.querySelector("[data-keyboard-list]");
    return list ? Array.prototype.slice.call(list.querySelectorAll("tr[data-row]")) : [];
  }
  function focusRow(index) {
    var all = rows();
    if (!all.length) { return; }
    current = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (row, i) { row.classList.toggle("is-current", i === current); });
    var link = all[current].querySelector("[data-row-link]");
    if (link) { link.focus(); }
  }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey && event.key === "Enter") {
      var form = document.querySelector("[data-adjudication-form]");
      var save = form && form.querySelector("button[data-save]");
      if (save && !save.disabled) {
        event.preventDefault();
        form.requestSubmit(save);
      }
      return;
    }
    if (event.altKey || event.ctrlKey || event.metaKey || typing(event.target)) { return; }
    if (!rows().length) { return; }
    if (event.key === "j") { event.preventDefault(); focusRow(current + 1); }
    else if (event.key === "k") { event.preventDefault(); focusRow(current < 0 ? 0 : current - 1); }
    else if (event.key === "Enter" && current >= 0 && !(event.target instanceof HTMLAnchorElement)) {
      var link = rows()[current].querySelector("[data-row-link]");
      if (link) { event.preventDefault(); window.location.assign(link.href); }
    }
  });
  document.addEventListener("htmx:afterSwap", function (event) {
    if (event.target && event.target.id === "queue-rows") { current = -1; }
  });

  // --- The decision form: a conflict (409) or a refusal (422) comes back as the re-rendered form. ---
  document.addEventListener("htmx:beforeSwap", function (event) {
    var status = event.detail.xhr.status;
    if ((status === 409 || status === 422) && event.detail.elt && event.detail.elt.matches &&
        event.detail.elt.matches("[data-adjudication-form]")) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
