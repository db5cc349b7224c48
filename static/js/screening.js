// Keyboard screening (CSP: no inline script): i include, x exclude, u skip, ArrowRight next,
// ArrowLeft previous, e edit the reason. Each key clicks the control marked data-key, so the keys do
// exactly what the buttons do, with or without htmx. Keys are ignored while typing in a field.
(function () {
  "use strict";

  function typing(target) {
    return target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    var card = document.getElementById("screen-card");
    if (!card) return;
    if (card.classList.contains("htmx-request")) { event.preventDefault(); return; }  // one decision at a time
    var focus = card.querySelector('[data-key-focus="' + event.key + '"]');
    if (focus) { event.preventDefault(); focus.focus(); focus.select(); return; }
    var control = card.querySelector('[data-key="' + event.key + '"]');
    if (control) { event.preventDefault(); control.click(); }
  });
})();
