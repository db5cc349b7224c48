"""The workbench's option lists, written without the template language: escaped, checked, described."""

from __future__ import annotations

from typing import Any

from apps.annotation.views.options import options_html


def _option(key: str, name: str, **extra: Any) -> dict[str, Any]:
    base = {"key": key, "name": name, "depth": 0, "parent": False, "context": "", "path": name,
            "lineage": key, "definition": "", "include": "", "exclude": "", "proposed": False}  # fmt: skip
    return {**base, **extra}


def _dimension(*options: dict[str, Any], multiple: bool = True) -> dict[str, Any]:
    return {"key": "symptom", "multiple": multiple, "options": list(options)}


def test_every_value_is_escaped() -> None:
    html = options_html(
        1,
        _dimension(_option("x", '<script>alert("1")</script>', context="A & B", definition="<b>'q'</b>")),
        set(),
    )
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(&quot;1&quot;)&lt;/script&gt;" in html
    assert "in A &amp; B" in html and "&lt;b&gt;&#x27;q&#x27;&lt;/b&gt;" in html


def test_selected_options_are_checked_and_named_per_finding_and_dimension() -> None:
    html = options_html(2, _dimension(_option("hang", "Hang"), _option("crash", "Crash")), {"crash"})
    assert '<input type="checkbox" name="v-2-symptom" value="hang">' in html
    assert '<input type="checkbox" name="v-2-symptom" value="crash" checked>' in html


def test_single_choice_dimensions_are_radios_and_definitions_describe_their_option() -> None:
    html = options_html(
        "__N__",
        _dimension(
            _option("fault", "Fault", definition="Broken.", include="Fails", exclude="Asks"), multiple=False
        ),
        set(),
    )
    assert (
        'type="radio" name="v-__N__-symptom" value="fault" aria-describedby="def-__N__-symptom-fault"' in html
    )
    assert '<div class="def" role="tooltip" id="def-__N__-symptom-fault"><p>Broken.</p>' in html
    assert "<strong>Use when:</strong> Fails" in html and "<strong>Not when:</strong> Asks" in html


def test_parents_proposals_and_an_empty_dimension() -> None:
    html = options_html(1, _dimension(_option("p", "Parent", parent=True, depth=1, proposed=True)), set())
    assert 'class="opt depth-1 has-children"' in html and "your proposal" in html
    assert options_html(1, _dimension(), set()) == '<li class="muted">No category yet.</li>'


def test_options_sharing_a_name_are_marked_to_always_show_their_path() -> None:
    html = options_html(
        1,
        _dimension(
            _option("setup-hang", "hang and timeout", context="Communication Setup"),
            _option("data-hang", "Hang and timeout", context="Data and Model Preparation"),
            _option("crash", "Crash", context="Training"),
        ),
        set(),
    )
    assert 'class="opt depth-0 same-name" data-key="setup-hang"' in html
    assert 'class="opt depth-0 same-name" data-key="data-hang"' in html
    assert 'class="opt depth-0" data-key="crash"' in html
    assert '<span class="opt-context small muted"> in Communication Setup</span>' in html


def test_a_chosen_category_no_longer_offered_comes_first_ticked_with_its_status() -> None:
    retired = {
        "key": "old",
        "name": "Old",
        "path": "Training > Old",
        "lineage": "training old",
        "status": "retired",
    }
    html = options_html(1, _dimension(_option("hang", "Hang"), multiple=False), {"old"}, [retired])
    assert html.startswith(
        '<li class="opt inactive" data-key="old" data-lineage="training old" '
        'data-search="training &gt; old old">'
        '<label><input type="radio" name="v-1-symptom" value="old" checked>'
    )
    assert (
        '<span class="opt-context small muted"> in Training</span> <span class="pill bad">retired</span>'
        in html
    )
