// Study settings: an invalid form comes back with status 422 and its errors under each field
// (docs/guide.md, "Study settings"); let htmx swap it like a 200.
(function () {
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.xhr && event.detail.xhr.status === 422) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
})();
