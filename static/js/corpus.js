// Import page helpers (CSP: no inline script). Without JavaScript the forms still work: every field
// stays visible and the rule sets can be picked from their select.
(function () {
  "use strict";

  function setField(form, name, value) {
    var fields = form.querySelectorAll("[name='" + name + "']");
    fields.forEach(function (field) {
      if (field.type === "checkbox") {
        field.checked = Boolean(value);
      } else if (field.type === "radio") {
        field.checked = field.value === String(value);
      } else {
        field.value = value;
      }
      field.dispatchEvent(new Event("change", { bubbles: true }));
    });
  }

  // Preset buttons: <button data-fill='{"name": value, ...}'> fills the form's fields by name.
  document.addEventListener("click", function (event) {
    var button = event.target instanceof Element ? event.target.closest("[data-fill]") : null;
    if (!button) return;
    var form = button.closest("form");
    var fill;
    try { fill = JSON.parse(button.getAttribute("data-fill")); } catch (e) { return; }
    Object.keys(fill).forEach(function (name) {
      if (name !== "label") setField(form, name, fill[name]);
    });
    form.querySelectorAll("[data-fill]").forEach(function (other) { other.classList.toggle("filled", other === button); });
  });

  // The GitHub form: show only the fieldset of the chosen mode (repository, search or URL list).
  function showMode(form) {
    var chosen = form.querySelector("input[name='mode']:checked");
    if (!chosen) return;
    form.querySelectorAll(".mode-fields").forEach(function (set) {
      set.hidden = set.getAttribute("data-mode") !== chosen.value;
    });
  }
  document.addEventListener("change", function (event) {
    var target = event.target;
    if (target instanceof HTMLInputElement && target.name === "mode" && target.form) showMode(target.form);
  });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form[data-import-form]").forEach(showMode);
  });
})();
