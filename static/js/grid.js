// The items grid (CSP: no inline script). The bulk bar and the save-view form sit outside the swapped
// results: after each swap they take the results' query string (data-query), so "every item matching
// the filters" and "Save view" mean the filters on screen. Without JavaScript the forms still work with
// the query of the page as loaded.
(function () {
  "use strict";

  function sync() {
    var results = document.getElementById("item-results");
    if (!results) return;
    document.querySelectorAll("[data-grid-query]").forEach(function (field) { field.value = results.dataset.query || ""; });
    document.querySelectorAll("[data-grid-sort]").forEach(function (field) { field.value = results.dataset.sort || ""; });
  }

  document.addEventListener("htmx:afterSwap", sync);
  document.addEventListener("change", function (event) {
    var box = event.target;
    if (!(box instanceof HTMLInputElement) || !box.hasAttribute("data-check-page")) return;
    document.querySelectorAll("#item-results input[name=ids]").forEach(function (other) { other.checked = box.checked; });
  });
})();
