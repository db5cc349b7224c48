// The Fix pane: two tabs (the issue and its comments / the fix) above an item, and the `f` key switching them.
// Without this script both are shown one after the other.
(function () {
  "use strict";

  function setup(pane) {
    var holder = pane.parentElement;
    if (!holder || holder.querySelector(".pane-tabs")) { return; }
    var tabs = document.createElement("div");
    tabs.className = "pane-tabs";
    tabs.setAttribute("role", "tablist");
    tabs.setAttribute("aria-label", "Issue or fix");
    var count = pane.querySelectorAll(".fix-link").length;
    [["issue", "Issue"], ["fix", "Fix (" + count + ")"]].forEach(function (pair) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "button small";
      button.setAttribute("role", "tab");
      button.setAttribute("aria-keyshortcuts", "f");
      button.dataset.paneTab = pair[0];
      button.textContent = pair[1];
      button.addEventListener("click", function () { show(holder, pair[0]); });
      tabs.appendChild(button);
    });
    var body = holder.querySelector(".item-body");
    holder.insertBefore(tabs, body || pane);
    show(holder, window.location.hash === "#fix-pane" ? "fix" : "issue");
  }

  function show(holder, which) {
    holder.dataset.pane = which;
    holder.querySelectorAll("[data-pane-tab]").forEach(function (tab) {
      tab.setAttribute("aria-selected", tab.dataset.paneTab === which ? "true" : "false");
    });
  }

  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  document.addEventListener("keydown", function (event) {
    if (event.key !== "f" || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) { return; }
    var pane = document.querySelector("[data-fix-pane]");
    if (!pane || !pane.parentElement.dataset.pane) { return; }
    event.preventDefault();
    var holder = pane.parentElement;
    show(holder, holder.dataset.pane === "fix" ? "issue" : "fix");
    if (holder.dataset.pane === "fix") { pane.focus({ preventScroll: true }); }
  });

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-fix-pane]").forEach(setup);
  });
})();
