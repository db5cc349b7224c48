from __future__ import annotations

from django import forms

from .models import Role, Study


class StudyForm(forms.ModelForm[Study]):
    class Meta:
        model = Study
        fields = ["name", "slug", "description", "overlap", "consolidation_rule"]
        help_texts = {"slug": "Short name used in URLs and on the command line, e.g. tosem23."}


class AddMemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)
    password = forms.CharField(
        required=False,
        widget=forms.PasswordInput,
        help_text="Only to create a new account: leave empty to add an existing user.",
    )


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. 'analysis notebook'.")


class StudySettingsForm(forms.ModelForm[Study]):
    """The settings a lead or an owner may change (`services.SETTINGS_FIELDS`); never the slug."""

    class Meta:
        model = Study
        fields = [
            "name",
            "description",
            "overlap",
            "consolidation_rule",
            "show_annotator_names",
            "require_rationale_on_override",
            "reveal_labels_after_decision",
            "discuss_after_reveal",
            "require_guidelines",
        ]
        labels = {
            "show_annotator_names": "Show annotators' names in adjudication (off: “Annotator 1”, …)",
            "require_rationale_on_override": "Require a rationale when the decision differs from all",
            "reveal_labels_after_decision": "Show annotators each other's labels once an item is decided",
            "discuss_after_reveal": "Open a discussion between a round's annotators when it is revealed",
            "require_guidelines": "Annotators must read the guidelines before they label",
        }
        help_texts = {
            "overlap": "How many annotators label each item. Applies to rounds assigned from now on: a round "
            "already assigned keeps the overlap it was assigned with.",
            "consolidation_rule": "Applies to items consolidated from now on; decisions already made stay.",
            "require_guidelines": "Until they acknowledge the current version of the guidelines, annotators "
            "are sent to them from their queue and the workbench, and the API refuses their submissions.",
        }
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}

    def clean_name(self) -> str:
        name = str(self.cleaned_data["name"]).strip()
        if not name:
            raise forms.ValidationError("A study needs a name.")
        return name


class DeleteStudyForm(forms.Form):
    confirm = forms.CharField(
        label="Type the study's slug to confirm",
        max_length=64,
        help_text="This deletes the study and everything in it (items, codebook, rounds, labels, decisions, "
        "exports). It cannot be undone.",
    )

    def __init__(self, slug: str, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.slug = slug

    def clean_confirm(self) -> str:
        typed = str(self.cleaned_data["confirm"])
        if typed != self.slug:
            raise forms.ValidationError(f"Type {self.slug} exactly to delete this study (got {typed!r}).")
        return typed
