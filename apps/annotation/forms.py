"""Forms of the lead's round pages and the screening page. The workbench's label inputs are read by
`payload.payload_from_form` (their names depend on the codebook), its other fields by `WorkbenchForm`."""

from __future__ import annotations

from typing import Any

from django import forms

from apps.corpus.models import Relevance, Source


class WorkbenchForm(forms.Form):
    """The workbench's fields besides the labels: what the page was rendered with, and time spent."""

    codebook_version = forms.IntegerField(min_value=0)
    seconds = forms.IntegerField(min_value=0, required=False)
    next = forms.ChoiceField(choices=[("next", "next"), ("stay", "stay")], required=False)


class _OwnIds(forms.Form):
    """The rounds page shows several forms with the same field names: each gets its own id prefix,
    so every <label for> points at its own input."""

    id_prefix = "id"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", f"{self.id_prefix}_%s")
        super().__init__(*args, **kwargs)


class DrawRoundForm(_OwnIds):
    id_prefix = "draw"
    number = forms.IntegerField(min_value=1, label="Round number")
    size = forms.IntegerField(min_value=1, label="Sample size", help_text="Items to draw.")
    seed = forms.IntegerField(help_text="Same seed, same study → same sample. State it in the paper.")
    stratify = forms.CharField(
        max_length=100,
        required=False,
        label="Stratify by",
        help_text="Empty for a uniform sample; 'source', 'tag' (first tag), or a metadata key (framework).",
    )


class AssignForm(_OwnIds):
    id_prefix = "assign"
    number = forms.TypedChoiceField(coerce=int, label="Round")
    annotators = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple,
        help_text="The round's annotators. Open work is shared evenly among them; submitted work stays.",
    )
    overlap = forms.IntegerField(min_value=1, label="Annotators per item (k)")

    def __init__(
        self, *args: Any, rounds: list[int], members: list[str], overlap: int, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.fields["number"].choices = [(n, f"Round {n}") for n in rounds]  # type: ignore[attr-defined]
        self.fields["annotators"].choices = [(m, m) for m in members]  # type: ignore[attr-defined]
        self.fields["overlap"].initial = overlap


class AddItemsForm(_OwnIds):
    """Items by hand (ids or URLs, one per line) or by a filter over items in no round yet."""

    id_prefix = "add"

    number = forms.IntegerField(min_value=1, label="Round number")
    items = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Items by hand",
        help_text="Item ids or URLs, one per line.",
    )
    source = forms.ChoiceField(choices=[("", "any source"), *Source.choices], required=False)
    tag = forms.CharField(max_length=100, required=False)
    text = forms.CharField(max_length=200, required=False, label="Words in the title")
    limit = forms.IntegerField(min_value=1, max_value=10_000, required=False, help_text="At most this many.")

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        data = self.cleaned_data
        by_filter = any(data.get(name) for name in ("source", "tag", "text"))
        if not data.get("items", "").strip() and not by_filter:
            raise forms.ValidationError("List items by hand, or give a filter (source, tag or words).")
        if data.get("items", "").strip() and by_filter:
            raise forms.ValidationError("Add items by hand or by a filter, not both at once.")
        return cleaned

    def item_lines(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data.get("items", "").splitlines() if line.strip()]


class ScreenForm(forms.Form):
    relevance = forms.ChoiceField(choices=Relevance.choices)
    reason = forms.CharField(max_length=500, required=False)

    def clean(self) -> dict[str, Any] | None:
        cleaned = super().clean()
        if (
            self.cleaned_data.get("relevance") == Relevance.IRRELEVANT
            and not self.cleaned_data.get("reason", "").strip()
        ):
            self.add_error("reason", "Say why the item is irrelevant.")
        return cleaned


class ReassignForm(forms.Form):
    annotator = forms.ChoiceField()

    def __init__(self, *args: Any, members: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["annotator"].choices = [(m, m) for m in members]  # type: ignore[attr-defined]
