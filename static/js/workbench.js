// The labelling workbench: keyboard shortcuts, conditional dimensions, search, findings, drafts.
// No inline scripts anywhere (CSP: script-src 'self'). The page works without this file: every input is a
// real form field and the submit button a real submit; this adds speed, never a requirement.
(function () {
  "use strict";

  var root = document.getElementById("workbench");
  if (!root) { return; }
  var form = document.getElementById("workbench-form");
  var findingsBox = document.getElementById("findings");
  var template = document.getElementById("finding-template");
  var help = document.getElementById("wb-help");
  var memo = document.getElementById("memo");
  var secondsInput = document.getElementById("wb-seconds");
  var saver = document.getElementById("draft-saver");
  var readonly = root.dataset.readonly === "true";
  var current = null;      // the focused dimension (a .dim section)
  var submitting = false;  // set once the form is on its way: no more draft saves
  var dirty = false;       // changed since the last draft save
  var seconds = 0;
  var lastActivity = Date.now();

  function toArray(list) { return Array.prototype.slice.call(list); }
  function findings() { return toArray(findingsBox ? findingsBox.querySelectorAll(".finding") : []); }
  function dims() { return toArray(root.querySelectorAll("#findings .dim")).filter(function (d) { return !d.hidden; }); }
  // The options the digit keys pick from: those shown, less the chosen ones the codebook no longer offers.
  function options(dim) { return toArray(dim.querySelectorAll(".opt:not(.inactive)")).filter(function (o) { return !o.hidden; }); }
  function isTyping(el) {
    if (!el || !el.tagName) { return false; }
    var tag = el.tagName.toLowerCase();
    if (tag === "textarea" || tag === "select" || el.isContentEditable) { return true; }
    return tag === "input" && ["radio", "checkbox", "button", "submit", "hidden"].indexOf(el.type) === -1;
  }
  function fire(el) { el.dispatchEvent(new Event("change", { bubbles: true })); }

  // --- Focus and numbering ---------------------------------------------------------------------------
  function numberOptions() {
    toArray(root.querySelectorAll(".opt .num")).forEach(function (n) { n.textContent = ""; });
    if (!current) { return; }
    options(current).slice(0, 10).forEach(function (opt, i) {
      opt.querySelector(".num").textContent = i === 9 ? "0" : String(i + 1);
    });
  }

  function focusDim(dim, moveFocus) {
    if (!dim) { return; }
    if (current && current !== dim) {
      current.classList.remove("focused");
      clearSearch(current);  // a filter lives while its dimension has the focus
    }
    current = dim;
    dim.classList.add("focused");
    numberOptions();
    if (moveFocus) {
      dim.focus({ preventScroll: true });
      dim.scrollIntoView({ block: "nearest" });
    }
  }

  function move(step) {
    var list = dims();
    if (!list.length) { return; }
    var i = list.indexOf(current);
    var next = i < 0 ? 0 : Math.max(0, Math.min(list.length - 1, i + step));
    focusDim(list[next], true);
  }

  // --- Conditional dimensions, pending ---------------------------------------------------------------
  function dimOf(finding, key) { return finding.querySelector('.dim[data-dimension="' + key + '"]'); }

  function refresh(finding) {
    // Twice, so that a chain (A applies when B, B applies when C) settles whatever the order.
    for (var pass = 0; pass < 2; pass += 1) {
      toArray(finding.querySelectorAll(".dim[data-applies-dim]")).forEach(function (dim) {
        var on = dimOf(finding, dim.dataset.appliesDim);
        var applies = false;
        if (on && !on.hidden) {
          if (on.querySelector("input.pending").checked) {
            applies = true;  // unknown while the condition is pending: allowed, not required
          } else {
            applies = toArray(on.querySelectorAll(".opt input:checked")).some(function (input) {
              var lineage = input.closest(".opt").dataset.lineage.split(" ");
              return lineage.indexOf(dim.dataset.appliesCat) !== -1;
            });
          }
        }
        dim.hidden = !applies;
        dim.classList.toggle("not-applicable", !applies);
        toArray(dim.querySelectorAll("input")).forEach(function (input) {
          if (input.type !== "search") { input.disabled = !applies || readonly; }
        });
      });
    }
    toArray(finding.querySelectorAll(".dim")).forEach(function (dim) {
      dim.classList.toggle("is-pending", dim.querySelector("input.pending").checked);
    });
    if (current && current.hidden) { current.classList.remove("focused"); current = null; }
  }

  function setPending(dim, on) {
    var box = dim.querySelector("input.pending");
    box.checked = on;
    if (on) { toArray(dim.querySelectorAll(".opt input")).forEach(function (i) { i.checked = false; }); }
    fire(box);
  }

  function pick(dim, index) {
    var opt = options(dim)[index];
    if (!opt) { return; }
    var input = opt.querySelector("input");
    if (input.disabled) { return; }
    input.checked = !input.checked;
    fire(input);
    if (input.checked && dim.dataset.multiple !== "true") { move(1); }
  }

  if (form) {
    form.addEventListener("change", function (event) {
      var target = event.target;
      var dim = target.closest ? target.closest(".dim") : null;
      if (dim && target.classList.contains("pending") && target.checked) {
        toArray(dim.querySelectorAll(".opt input")).forEach(function (i) { i.checked = false; });
      } else if (dim && target.closest(".opt") && target.checked) {
        dim.querySelector("input.pending").checked = false;
      }
      var finding = target.closest ? target.closest(".finding") : null;
      if (finding) { refresh(finding); }
      numberOptions();
      dirty = true;
    });
    form.addEventListener("input", function () { dirty = true; });
    form.addEventListener("focusin", function (event) {
      var dim = event.target.closest(".dim");
      if (dim) { focusDim(dim, false); }
    });
    form.addEventListener("submit", function () { submitting = true; });
  }

  // --- Search inside a dimension ---------------------------------------------------------------------
  // While a filter is shown (typing in the box, or after Esc left the box), the digits are numbered on the
  // matches, and pick among them only: never a category the annotator cannot see. Esc in the box leaves it
  // with the filter kept; Esc again, moving to another dimension, or Enter (which picks the first match)
  // brings the full list back.
  function filter(dim, text) {
    var words = text.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    dim.classList.toggle("searching", words.length > 0);
    toArray(dim.querySelectorAll(".opt")).forEach(function (opt) {
      var haystack = opt.dataset.search || "";
      opt.hidden = !words.every(function (w) { return haystack.indexOf(w) !== -1; });
      if (!opt.hidden) { shown += 1; }
    });
    var note = dim.querySelector(".no-match");
    if (note) {
      note.hidden = !(words.length && !shown);
      note.textContent = note.hidden ? "" : "No category matches “" + text.trim() + "”. Esc twice shows them all.";
    }
    numberOptions();
  }

  function clearSearch(dim) {
    var search = dim.querySelector(".dim-search");
    if (search && search.value) { search.value = ""; }
    if (dim.classList.contains("searching")) { filter(dim, ""); }
  }

  function leaveSearch(search, keepFilter) {
    var dim = search.closest(".dim");
    if (!keepFilter || !search.value.trim()) { clearSearch(dim); }
    focusDim(dim, true);
  }

  root.addEventListener("input", function (event) {
    if (event.target.classList && event.target.classList.contains("dim-search")) {
      var dim = event.target.closest(".dim");
      focusDim(dim, false);
      filter(dim, event.target.value);
    }
  });

  root.addEventListener("keydown", function (event) {
    var search = event.target;
    if (!search.classList || !search.classList.contains("dim-search")) { return; }
    var dim = search.closest(".dim");
    if (event.key === "Enter") {
      event.preventDefault();  // never submit the form from a search box
      if (search.value.trim()) {
        if (!options(dim).length) { return; }  // no match: nothing to pick, the box stays with its note
        pick(dim, 0);
      }
      if (document.activeElement === search) { leaveSearch(search, false); } else { clearSearch(dim); }
    } else if (event.key === "Escape") {
      event.preventDefault();
      leaveSearch(search, true);
    } else if (event.key === "ArrowDown") {
      var first = options(dim)[0];
      if (first) { event.preventDefault(); first.querySelector("input").focus(); }
    }
  });

  // --- Findings --------------------------------------------------------------------------------------
  function renumber() {
    findings().forEach(function (finding, i) { finding.querySelector(".finding-number").textContent = String(i + 1); });
  }

  function addFinding() {
    if (!template || !findingsBox || readonly) { return; }
    var numbers = findings().map(function (f) { return parseInt(f.dataset.finding, 10) || 0; });
    var n = (numbers.length ? Math.max.apply(null, numbers) : 0) + 1;
    var holder = document.createElement("div");
    holder.innerHTML = template.innerHTML.replace(/__N__/g, String(n));
    var finding = holder.firstElementChild;
    findingsBox.appendChild(finding);
    refresh(finding);
    renumber();
    focusDim(finding.querySelector(".dim:not([hidden])"), true);
    fire(form);
  }

  function removeFinding(finding) {
    if (findings().length < 2) { return; }
    var wasCurrent = current && finding.contains(current);
    finding.remove();
    renumber();
    if (wasCurrent) { current = null; focusDim(dims()[0], true); }
    fire(form);
  }

  root.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-action]") : null;
    if (!button) { return; }
    var action = button.dataset.action;
    if (action === "help") { toggleHelp(); }
    if (action === "add-finding") { addFinding(); }
    if (action === "remove-finding") { removeFinding(button.closest(".finding")); }
  });

  // --- Help overlay ----------------------------------------------------------------------------------
  var helpReturn = null;
  function toggleHelp(force) {
    if (!help) { return; }
    var open = typeof force === "boolean" ? force : help.hidden;
    help.hidden = !open;
    if (open) {
      helpReturn = document.activeElement;
      help.querySelector("button").focus();
    } else if (helpReturn && helpReturn.focus) {
      helpReturn.focus();
    }
  }

  // --- The keyboard ----------------------------------------------------------------------------------
  function submitNext() {
    if (!form || readonly || submitting) { return; }
    var button = form.querySelector('button[type=submit][value="next"]');
    if (form.requestSubmit) { form.requestSubmit(button || undefined); } else { form.submit(); }
  }

  document.addEventListener("keydown", function (event) {
    lastActivity = Date.now();
    if (help && !help.hidden) {
      if (event.key === "Escape" || event.key === "?") { event.preventDefault(); toggleHelp(false); }
      return;
    }
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter") {
      event.preventDefault();
      submitNext();
      return;
    }
    if (isTyping(event.target)) {
      if (event.key === "Escape" && event.target === memo) { event.preventDefault(); memo.blur(); focusDim(current || dims()[0], true); }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey) { return; }
    var key = event.key;
    if (key === "?") { event.preventDefault(); toggleHelp(true); return; }
    if (key === "Escape" && current && current.classList.contains("searching")) {
      event.preventDefault();
      clearSearch(current);
      return;
    }
    if (key === "j") { event.preventDefault(); move(1); return; }
    if (key === "k") { event.preventDefault(); move(-1); return; }
    if (readonly) { return; }
    if (/^[0-9]$/.test(key)) {
      if (!current) { focusDim(dims()[0], true); }
      if (current) { event.preventDefault(); pick(current, key === "0" ? 9 : parseInt(key, 10) - 1); }
    } else if (key === "/") {
      if (!current) { focusDim(dims()[0], true); }
      if (current) { event.preventDefault(); current.querySelector(".dim-search").focus(); }
    } else if (key === "p") {
      if (current) { event.preventDefault(); setPending(current, !current.querySelector("input.pending").checked); }
    } else if (key === "n") {
      event.preventDefault();
      addFinding();
    } else if (key === "m" && memo) {
      event.preventDefault();
      memo.focus();
    } else if (key === "s") {
      event.preventDefault();
      submitNext();
    }
  });

  // --- Drafts: debounced htmx saves (see #draft-saver), and a beacon when the tab goes away -----------
  document.addEventListener("htmx:confirm", function (event) {
    if (event.target === saver && (submitting || readonly)) { event.preventDefault(); }
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (event.target === saver && event.detail.successful) { dirty = false; }
  });
  function flushDraft() {
    if (!dirty || submitting || readonly || !form || !navigator.sendBeacon) { return; }
    navigator.sendBeacon(root.dataset.draftUrl, new FormData(form));
    dirty = false;
  }
  document.addEventListener("visibilitychange", function () { if (document.visibilityState === "hidden") { flushDraft(); } });
  window.addEventListener("pagehide", flushDraft);

  // --- Time on the item: visible and active (input in the last two minutes) --------------------------
  ["mousemove", "scroll", "click"].forEach(function (name) {
    document.addEventListener(name, function () { lastActivity = Date.now(); }, { passive: true });
  });
  window.setInterval(function () {
    if (document.visibilityState === "visible" && Date.now() - lastActivity < 120000) {
      seconds += 1;
      if (secondsInput) { secondsInput.value = String(seconds); }
    }
  }, 1000);

  // --- Proposed codes: the new option appears at once in every finding -------------------------------
  var proposeDimension = document.getElementById("propose-dimension");
  var proposeParent = document.getElementById("propose-parent");
  function filterParents() {
    if (!proposeDimension || !proposeParent) { return; }
    toArray(proposeParent.querySelectorAll("optgroup")).forEach(function (group) {
      var match = group.dataset.dimension === proposeDimension.value;
      group.hidden = !match;
      group.disabled = !match;
    });
    var chosen = proposeParent.selectedOptions[0];
    if (chosen && chosen.parentElement.disabled) { proposeParent.value = ""; }
  }
  if (proposeDimension) {
    proposeDimension.addEventListener("change", filterParents);
    filterParents();
  }
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.target && event.detail.target.id === "propose-result" && event.detail.xhr.status === 422) {
      event.detail.shouldSwap = true;  // show the form's errors
      event.detail.isError = false;
    }
  });

  function addOption(scope, detail, number) {
    var dim = scope.querySelector('.dim[data-dimension="' + detail.dimension + '"]');
    if (!dim || dim.querySelector('.opt[data-key="' + detail.key + '"]')) { return null; }
    var list = dim.querySelector(".options");
    var parent = detail.parent ? dim.querySelector('.opt[data-key="' + detail.parent + '"]') : null;
    var depth = 1;
    if (parent) {
      var match = /depth-(\d)/.exec(parent.className);
      depth = Math.min(5, (match ? parseInt(match[1], 10) : 1) + 1);
    }
    var li = document.createElement("li");
    li.className = "opt depth-" + depth;
    li.dataset.key = detail.key;
    li.dataset.lineage = ((parent ? parent.dataset.lineage + " " : "") + detail.key).trim();
    li.dataset.search = (detail.name + " " + detail.key).toLowerCase();
    var label = document.createElement("label");
    var input = document.createElement("input");
    input.type = dim.dataset.multiple === "true" ? "checkbox" : "radio";
    input.name = "v-" + number + "-" + detail.dimension;
    input.value = detail.key;
    var num = document.createElement("kbd");
    num.className = "num";
    num.setAttribute("aria-hidden", "true");
    var name = document.createElement("span");
    name.className = "opt-name";
    name.textContent = detail.name;
    var pill = document.createElement("span");
    pill.className = "pill warn";
    pill.textContent = "your proposal";
    label.append(input, num, name, " ", pill);
    li.appendChild(label);
    list.appendChild(li);
    return input;
  }

  document.addEventListener("category-proposed", function (event) {
    var detail = event.detail || {};
    var target = current ? current.closest(".finding") : findings()[0];
    findings().forEach(function (finding) {
      var input = addOption(finding, detail, finding.dataset.finding);
      if (input && finding === target && current && current.dataset.dimension === detail.dimension) {
        input.checked = true;
        fire(input);
      }
    });
    if (template) { addOption(template.content, detail, "__N__"); }
  });

  // --- A refused submission: each problem links to its dimension; the focus goes to the first ---------
  function dimOfError(li) {
    var finding = findingsBox && findingsBox.querySelector('.finding[data-finding="' + li.dataset.finding + '"]');
    var dim = finding ? dimOf(finding, li.dataset.dimension) : null;
    return dim && !dim.hidden ? dim : null;
  }

  function markErrors(box) {
    var first = null;
    toArray(box.querySelectorAll("li[data-dimension]")).forEach(function (li) {
      var dim = dimOfError(li);
      if (!dim) { return; }
      dim.classList.add("wb-invalid");
      var ids = (dim.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
      ids.push(li.id);
      dim.setAttribute("aria-describedby", ids.join(" "));
      first = first || dim;
      li.querySelector("a").addEventListener("click", function (event) {
        event.preventDefault();
        focusDim(dim, true);
      });
    });
    return first;
  }

  // --- Start -----------------------------------------------------------------------------------------
  findings().forEach(refresh);
  var errors = document.getElementById("wb-errors");
  var wrong = errors ? markErrors(errors) : null;
  if (errors) { errors.setAttribute("tabindex", "-1"); }
  focusDim(wrong || dims()[0], !errors || Boolean(wrong));
  if (errors && !wrong) { errors.focus(); }
})();
