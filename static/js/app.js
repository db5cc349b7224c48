// Taxonomist's small client-side helpers. No inline scripts anywhere (CSP: script-src 'self').
(function () {
  "use strict";
  // Confirm dangerous actions: <form data-confirm="Really?">.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  });
})();
