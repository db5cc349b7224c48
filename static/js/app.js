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

// A request htmx sent that the server refused (403 of an archived study, 404 of a deleted item, a 500) or
// that never reached it: say so at the top of the page instead of leaving the click without an answer.
// Screens that swap their own refusals in (422/409 forms) mark them as no error first (their beforeSwap).
(function () {
  "use strict";
  var FALLBACK = {
    403: "Not allowed: your role or the study's state does not allow this.",
    404: "Not found: it may have been deleted or moved. Reload the page.",
    409: "Someone changed this at the same time. Reload the page and try again.",
    413: "Too large for the server to accept.",
    429: "Too many requests: wait a moment and try again.",
  };

  function reason(xhr) {
    var type = xhr.getResponseHeader("Content-Type") || "";
    var text = xhr.responseText || "";
    if (type.indexOf("application/json") === 0) {
      try { var data = JSON.parse(text); if (data && typeof data.detail === "string") { return data.detail; } }
      catch (ignored) { /* not JSON after all */ }
    }
    if (type.indexOf("text/html") === 0 && text) {
      var page = new DOMParser().parseFromString(text, "text/html");
      var said = page.querySelector("[data-testid=error-page] p:not(.muted)");
      if (said && said.textContent.trim()) { return said.textContent.trim(); }
    }
    if (FALLBACK[xhr.status]) { return FALLBACK[xhr.status]; }
    if (xhr.status >= 500) { return "The server failed (error " + xhr.status + "). Reload the page and try again."; }
    return "The server refused this (error " + xhr.status + ").";
  }

  function show(message) {
    var main = document.getElementById("main");
    if (!main) { return; }
    var list = main.querySelector("ul.messages[data-request-errors]");
    if (!list) {
      list = document.createElement("ul");
      list.className = "messages";
      list.setAttribute("data-request-errors", "");
      list.setAttribute("role", "alert");
      main.insertBefore(list, main.firstChild);
    }
    var same = Array.prototype.some.call(list.children, function (li) { return li.textContent === message; });
    if (same) { return; }
    var item = document.createElement("li");
    item.className = "message message-error";
    item.textContent = message;
    list.appendChild(item);
  }

  document.addEventListener("htmx:responseError", function (event) {
    show(reason(event.detail.xhr));
  });
  document.addEventListener("htmx:sendError", function () {
    show("The server did not answer: check the connection, then try again.");
  });
})();
