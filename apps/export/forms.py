"""The export options form: format, raw labels and filters, validated by `services.parse_options`."""

from __future__ import annotations

from typing import Any

from django import forms

from apps.accounts.models import Study
from apps.adjudication.models import Provenance
from apps.annotation.models import Round
from apps.corpus.models import Source
from apps.taxonomy.index import CodebookIndex

from .models import ExportFormat
from .rows import ExportOptions
from .services import ExportOptionError, max_level, parse_options


def _whole(value: str) -> int:
    return int(value)


class ExportForm(forms.Form):
    """Valid when `services.parse_options` accepts the choices; then `options` holds them."""

    format = forms.ChoiceField(choices=ExportFormat.choices, initial=ExportFormat.CSV)
    raw = forms.BooleanField(
        required=False,
        label="Include every annotator's labels",
        help_text="Adds one row per annotator finding (column annotator) and undecided items.",
    )
    round = forms.TypedChoiceField(coerce=_whole, empty_value=None, required=False, label="Round")
    provenance = forms.TypedChoiceField(
        choices=[("", "Any provenance"), *Provenance.choices], empty_value=None, required=False
    )
    source = forms.TypedChoiceField(
        choices=[("", "Any source"), *Source.choices], empty_value=None, required=False
    )
    level = forms.TypedChoiceField(
        coerce=_whole, empty_value=None, required=False, label="Category level",
        help_text="Full path to the leaf, or cut the tree at a level (1 = top, e.g. the stage).",
    )  # fmt: skip

    def __init__(self, study: Study, *args: Any, index: CodebookIndex | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.study = study
        self.index = index or CodebookIndex.for_study(study)
        self.options: ExportOptions | None = None
        numbers = Round.objects.filter(study=study).order_by("number").values_list("number", "name")
        round_field = self.fields["round"]
        assert isinstance(round_field, forms.TypedChoiceField)
        round_field.choices = [("", "All rounds")] + [
            (str(n), f"{n}: {name}" if name else f"Round {n}") for n, name in numbers
        ]
        level_field = self.fields["level"]
        assert isinstance(level_field, forms.TypedChoiceField)
        level_field.choices = [("", "Full path (leaf)")] + [
            (str(n), f"Level {n}" + (" (top)" if n == 1 else "")) for n in range(1, max_level(self.index) + 1)
        ]
        # A refused value names the valid ones, as the command line and the API do.
        for name, field in self.fields.items():
            if isinstance(field, forms.ChoiceField):
                choices: list[tuple[object, object]] = list(field.choices)  # type: ignore[arg-type]
                valid = ", ".join(str(value) for value, _ in choices if value != "") or "none"
                field.error_messages["invalid_choice"] = f"unknown {name} %(value)s; valid {name}s: {valid}"

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        try:
            self.options = parse_options(
                self.study,
                format=data["format"],
                raw=bool(data.get("raw")),
                round=data.get("round"),
                provenance=data.get("provenance"),
                source=data.get("source"),
                level=data.get("level"),
                index=self.index,
            )
        except ExportOptionError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data
