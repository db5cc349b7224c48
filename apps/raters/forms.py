"""The Models screen's forms: a rater's settings and a run's scope, parsed into what the services take."""

from __future__ import annotations

from django import forms

from .models import RaterKind, RunScope
from .services import RaterSettings

KINDS = [
    (RaterKind.OPENAI.value, RaterKind.OPENAI.label),
    (RaterKind.BASELINE.value, RaterKind.BASELINE.label),
    (RaterKind.IMPORTED.value, RaterKind.IMPORTED.label),
]


class RaterForm(forms.Form):
    name = forms.CharField(max_length=64, help_text="Letters, digits, '.', '_' or '-'; not a user's name.")
    kind = forms.ChoiceField(choices=KINDS, initial=RaterKind.OPENAI.value)
    base_url = forms.CharField(
        label="Base URL", required=False, max_length=500, help_text="e.g. http://127.0.0.1:11434/v1 (Ollama)"
    )
    model = forms.CharField(required=False, max_length=200)
    api_key_env = forms.CharField(
        label="API key variable",
        required=False,
        max_length=100,
        help_text="The name of the environment variable that holds the key (never the key itself): "
        "OPENAI_API_KEY and the others the server allows, or MODEL_KEY_...",
    )
    temperature = forms.FloatField(initial=0.0, min_value=0.0, max_value=2.0)
    samples = forms.IntegerField(initial=1, min_value=1, max_value=20, help_text="Answers per item (k).")
    concurrency = forms.IntegerField(initial=4, min_value=1, max_value=64)
    timeout = forms.FloatField(initial=60.0, min_value=1.0, max_value=600.0, help_text="Seconds per request.")

    def settings(self) -> RaterSettings:
        data = self.cleaned_data
        return RaterSettings(
            kind=data["kind"],
            base_url=data["base_url"].strip(),
            model=data["model"].strip(),
            api_key_env=data["api_key_env"].strip(),
            temperature=data["temperature"],
            samples=data["samples"],
            concurrency=data["concurrency"],
            timeout=data["timeout"],
        )


class RunForm(forms.Form):
    scope = forms.ChoiceField(choices=RunScope.choices, initial=RunScope.ROUND.value)
    round = forms.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    sample_size = forms.IntegerField(label="Sample size", required=False, min_value=1, max_value=2**31 - 1)
    seed = forms.IntegerField(required=False, min_value=-(2**63), max_value=2**63 - 1)
    limit = forms.IntegerField(
        required=False, min_value=1, max_value=2**31 - 1, help_text="At most this many items."
    )

    def scope_kwargs(self) -> dict[str, object]:
        """create_model_run's scope arguments for the chosen scope (the others are ignored)."""
        data = self.cleaned_data
        if data["scope"] == RunScope.ROUND:
            return {"round_number": data["round"] if data["round"] is not None else 0, "limit": data["limit"]}
        if data["scope"] == RunScope.SAMPLE:
            return {"sample_size": data["sample_size"] or 0, "seed": data["seed"], "limit": data["limit"]}
        return {"unlabelled": True, "limit": data["limit"]}
