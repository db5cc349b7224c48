"""Forms of the codebook editor. Category pickers take their choices from a `CodebookIndex` (paths in tree
order, no query per option); views resolve the chosen ids through study-scoped queries."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django import forms

from .index import CodebookIndex

Choices = list[tuple[Any, str]]
TOP_LEVEL = ""


def category_choices(
    index: CodebookIndex, dimension_key: str, *, exclude: Iterable[int] = (), indent: bool = True
) -> Choices:
    """Active categories of the dimension in tree order, labelled by indented name (or full path)."""
    skip = set(exclude)
    choices: Choices = []
    for info in index.categories_of(dimension_key):
        if info.id in skip:
            continue
        depth = index.depth(info.id)
        label = ("\u2003" * (depth - 1) + info.name) if indent else index.path(info.id)
        choices.append((info.id, label))
    return choices


def condition_choices(index: CodebookIndex, *, exclude_dimension: int | None = None) -> Choices:
    """Every active category of the other active dimensions, as 'Dimension: path'."""
    choices: Choices = [(TOP_LEVEL, "— always applies —")]
    for dimension in index.dimensions:
        if dimension.id == exclude_dimension:
            continue
        for info in index.categories_of(dimension.key):
            choices.append((info.id, f"{dimension.name}: {index.path(info.id)}"))
    return choices


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class CategoryFieldsForm(forms.Form):
    """Name, definition, criteria and examples: what the editor's main form edits."""

    name = forms.CharField(max_length=200)
    definition = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    include = forms.CharField(required=False, label="Include when", widget=forms.Textarea(attrs={"rows": 2}))
    exclude = forms.CharField(required=False, label="Exclude when", widget=forms.Textarea(attrs={"rows": 2}))
    examples = forms.CharField(
        required=False,
        help_text="One per line: a short text or an item URL.",
        widget=forms.Textarea(attrs={"rows": 2}),
    )

    def clean_examples(self) -> list[str]:
        return _lines(self.cleaned_data["examples"])


class AddCategoryForm(CategoryFieldsForm):
    key = forms.SlugField(
        max_length=100,
        help_text="Lower-case letters, digits, - and _. Label files use it; it never changes.",
    )
    parent = forms.TypedChoiceField(coerce=int, empty_value=None, required=False, label="Under")

    field_order = ["name", "key", "parent", "definition", "include", "exclude", "examples"]

    def __init__(self, *args: Any, parents: Choices, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["parent"].choices = [(TOP_LEVEL, "— top level —"), *parents]  # type: ignore[attr-defined]


class MoveForm(forms.Form):
    parent = forms.TypedChoiceField(coerce=int, empty_value=None, required=False, label="New parent")

    def __init__(self, *args: Any, parents: Choices, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["parent"].choices = [(TOP_LEVEL, "— top level —"), *parents]  # type: ignore[attr-defined]


class MergeForm(forms.Form):
    target = forms.TypedChoiceField(coerce=int, label="Merge into")

    def __init__(self, *args: Any, targets: Choices, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["target"].choices = [("", "— choose a category —"), *targets]  # type: ignore[attr-defined]


class ReorderForm(forms.Form):
    direction = forms.ChoiceField(choices=[("up", "Up"), ("down", "Down")])


SPLIT_PARTS = 4


class SplitForm(forms.Form):
    """Up to four new categories; the first two are required."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for n in range(1, SPLIT_PARTS + 1):
            required = n <= 2
            self.fields[f"part{n}_name"] = forms.CharField(max_length=200, required=required, label="Name")
            self.fields[f"part{n}_key"] = forms.SlugField(max_length=100, required=required, label="Key")
            self.fields[f"part{n}_definition"] = forms.CharField(
                required=False, label="Definition", widget=forms.Textarea(attrs={"rows": 2})
            )

    def parts(self) -> list[tuple[str, str, str]]:
        """(key, name, definition) of every filled-in part."""
        out = []
        for n in range(1, SPLIT_PARTS + 1):
            key = self.cleaned_data.get(f"part{n}_key") or ""
            name = self.cleaned_data.get(f"part{n}_name") or ""
            if key or name:
                out.append((key, name, self.cleaned_data.get(f"part{n}_definition") or ""))
        return out

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        for n in range(3, SPLIT_PARTS + 1):
            key, name = self.cleaned_data.get(f"part{n}_key"), self.cleaned_data.get(f"part{n}_name")
            if bool(key) != bool(name):
                self.add_error(f"part{n}_key" if not key else f"part{n}_name", "Give both a name and a key.")
        return cleaned

    def rows(self) -> list[list[forms.BoundField]]:
        return [
            [self[f"part{n}_name"], self[f"part{n}_key"], self[f"part{n}_definition"]]
            for n in range(1, SPLIT_PARTS + 1)
        ]


class ReassignFilterForm(forms.Form):
    KINDS = [("all", "Annotator and gold labels"), ("labels", "Annotator labels"), ("gold", "Gold labels")]

    annotator = forms.ChoiceField(required=False)
    q = forms.CharField(required=False, label="Item title or URL contains")
    kind = forms.ChoiceField(choices=KINDS, required=False)

    def __init__(self, *args: Any, annotators: Sequence[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["annotator"].choices = [("", "— anyone —"), *[(a, a) for a in annotators]]  # type: ignore[attr-defined]


class IdListField(forms.Field):
    """Several integer ids from checkboxes sharing one name (checked against the source by the service)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[int]:
        if not value:
            return []
        try:
            return [int(v) for v in value]
        except (TypeError, ValueError):
            raise forms.ValidationError("Invalid label id.") from None


class ReassignForm(forms.Form):
    target = forms.TypedChoiceField(coerce=int, label="Move to")
    label = IdListField(required=False)
    decision = IdListField(required=False)
    all_matching = forms.BooleanField(required=False, label="Every label matching the filter")

    def __init__(self, *args: Any, targets: Choices, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["target"].choices = [("", "— choose —"), *targets]  # type: ignore[attr-defined]


class DimensionForm(forms.Form):
    name = forms.CharField(max_length=200)
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    multiple = forms.BooleanField(required=False, label="Several categories may be chosen")
    applies_when = forms.TypedChoiceField(
        coerce=int,
        empty_value=None,
        required=False,
        label="Applies only when",
        help_text="Ask this dimension only when this category (or one below it) is chosen.",
    )

    def __init__(self, *args: Any, conditions: Choices, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["applies_when"].choices = conditions  # type: ignore[attr-defined]


class AddDimensionForm(DimensionForm):
    key = forms.SlugField(max_length=64, help_text="Lower-case letters, digits, - and _; never changes.")

    field_order = ["name", "key", "description", "multiple", "applies_when"]


class ProposeForm(forms.Form):
    """What the workbench posts to propose a code (keys, not ids: the workbench knows keys)."""

    dimension = forms.CharField(max_length=64)
    name = forms.CharField(max_length=200)
    parent = forms.CharField(max_length=100, required=False, help_text="The parent category's key.")
    reason = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    input_name = forms.CharField(max_length=100, required=False)


class RejectForm(forms.Form):
    move_to = forms.TypedChoiceField(coerce=int, empty_value=None, required=False, label="Move its labels to")
    note = forms.CharField(required=False, max_length=500)

    def __init__(self, *args: Any, targets: Choices, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["move_to"].choices = [("", "— no labels to move —"), *targets]  # type: ignore[attr-defined]


class LoadForm(forms.Form):
    file = forms.FileField(
        required=False, help_text="A .json, .yaml or .yml codebook file (docs/design.md §5)."
    )
    text = forms.CharField(required=False, strip=False, widget=forms.HiddenInput)
    format = forms.ChoiceField(
        choices=[("json", "JSON"), ("yaml", "YAML")], required=False, widget=forms.HiddenInput
    )

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        if not self.cleaned_data.get("file") and not self.cleaned_data.get("text"):
            raise forms.ValidationError("Choose a codebook file.")
        return cleaned
