"""The category options of one dimension of one finding, as HTML.

The workbench shows every option of every dimension for each finding (and once more in the blank finding
template): about 250 list items with a dozen values each. Written by the template language that took
most of the page's time, so they are built here with plain string formatting; every value is escaped.
The markup is what `annotation/_finding.html` documents and `static/js/workbench.js` reads
(`data-key`, `data-lineage`, `data-search`, the input's name and value, `.def` tooltips).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from html import escape as _escape
from typing import Any

from django.utils.safestring import SafeString, mark_safe


def escape(value: object) -> str:
    """HTML-escape like Django's `escape` (quotes included), without its lazy-string wrapper: it runs
    about 3,000 times per page."""
    return _escape(str(value), quote=True)


EMPTY = mark_safe('<li class="muted">No category yet.</li>')


def options_html(
    number: int | str,
    dimension: Mapping[str, Any],
    selected: Collection[str],
    inactive: Sequence[Mapping[str, str]] = (),
) -> SafeString:
    """The `<li>` options of `dimension` (as `_dimensions_view` builds it) for finding `number`.

    `inactive` are chosen categories the codebook no longer offers (retired, merged, ... since the draft
    was saved: key, name, path, lineage, status): listed first, ticked and flagged with their status, so
    the annotator sees them and changes them; they are not numbered for the digit keys (`.inactive`)."""
    options = dimension["options"]
    if not options and not inactive:
        return EMPTY
    dim = escape(dimension["key"])
    name = f"v-{escape(number)}-{dim}"
    kind = "checkbox" if dimension["multiple"] else "radio"
    parts = [_inactive(o, name, kind) for o in inactive]
    seen = Counter(str(o["name"]).casefold() for o in options)
    for o in options:
        key = escape(o["key"])
        def_id = f"def-{escape(number)}-{dim}-{key}"
        described = bool(o["definition"] or o["include"] or o["exclude"])
        classes = " has-children" if o["parent"] else ""
        if seen[str(o["name"]).casefold()] > 1:
            classes += " same-name"  # its path always shows: two "hang and timeout" in different stages
        checked = " checked" if o["key"] in selected else ""
        describedby = f' aria-describedby="{def_id}"' if described else ""
        proposal = ' <span class="pill warn">your proposal</span>' if o["proposed"] else ""
        definition = _definition(o, def_id) if described else ""
        parts.append(
            f'<li class="opt depth-{int(o["depth"])}{classes}" data-key="{key}" '
            f'data-lineage="{escape(o["lineage"])}" data-search="{escape(o["path"].lower())} {key}">'
            f'<label><input type="{kind}" name="{name}" value="{key}"{checked}{describedby}>'
            f'<kbd class="num" aria-hidden="true"></kbd><span class="opt-name">{escape(o["name"])}</span>'
            f"{_context(o)}{proposal}</label>{definition}</li>"
        )
    return mark_safe("\n".join(parts))  # every value above is escaped


def _inactive(option: Mapping[str, str], name: str, kind: str) -> str:
    key = escape(option["key"])
    context = option["path"].rpartition(" > ")[0]
    where = f'<span class="opt-context small muted"> in {escape(context)}</span>' if context else ""
    return (
        f'<li class="opt inactive" data-key="{key}" data-lineage="{escape(option["lineage"])}" '
        f'data-search="{escape(option["path"].lower())} {key}">'
        f'<label><input type="{kind}" name="{name}" value="{key}" checked>'
        f'<kbd class="num" aria-hidden="true"></kbd><span class="opt-name">{escape(option["name"])}</span>'
        f'{where} <span class="pill bad">{escape(option["status"])}</span></label></li>'
    )


def _context(option: Mapping[str, Any]) -> str:
    if not option["context"]:
        return ""
    return f'<span class="opt-context small muted"> in {escape(option["context"])}</span>'


def _definition(option: Mapping[str, Any], def_id: str) -> str:
    inner = ""
    if option["definition"]:
        inner += f"<p>{escape(option['definition'])}</p>"
    if option["include"]:
        inner += f"<p><strong>Use when:</strong> {escape(option['include'])}</p>"
    if option["exclude"]:
        inner += f"<p><strong>Not when:</strong> {escape(option['exclude'])}</p>"
    return f'<div class="def" role="tooltip" id="{def_id}">{inner}</div>'
