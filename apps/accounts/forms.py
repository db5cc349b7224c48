from __future__ import annotations

from typing import Any

from allauth.account.forms import LoginForm as AllauthLoginForm
from django import forms
from django.http import QueryDict

from .models import Role, Study


class LoginForm(AllauthLoginForm):
    """allauth's login form (a username or an e-mail address, and the password) that also takes the field
    name ``username`` for the login, as Django's form did: scripts and the admin's habits keep working."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        data = kwargs.get("data", args[0] if args else None)
        if data is not None and "login" not in data and "username" in data:
            data = data.copy() if isinstance(data, QueryDict) else dict(data)
            data["login"] = str(data["username"])
            if "data" in kwargs:
                kwargs["data"] = data
            else:
                args = (data, *args[1:])
        super().__init__(*args, **kwargs)
        self.fields["login"].label = "Username or e-mail"
        self.fields["login"].widget.attrs.update({"autocomplete": "username", "autofocus": True})
        self.fields["login"].widget.attrs.pop("placeholder", None)
        self.fields["password"].widget.attrs.pop("placeholder", None)


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


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class InvitationForm(forms.Form):
    """A lead's invitation: to an e-mail address (single use), or a link for one person or several."""

    email = forms.EmailField(
        required=False, help_text="They get the link by e-mail. Leave empty to create a link to hand out."
    )
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)
    expires_days = forms.IntegerField(label="Expires after (days)", min_value=1, max_value=365, initial=14)
    max_uses = forms.IntegerField(
        label="Uses",
        required=False,
        min_value=1,
        initial=1,
        help_text="How many people may join through a link; empty: anyone who has it, until it expires.",
    )


class InvitationSignupForm(forms.Form):
    """A new account, made on an invitation's page."""

    username = forms.CharField(max_length=150, widget=forms.TextInput(attrs={"autocomplete": "username"}))
    email = forms.EmailField(widget=forms.EmailInput(attrs={"autocomplete": "email"}))
    password1 = forms.CharField(
        label="Password", widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )
    password2 = forms.CharField(
        label="Password (again)", widget=forms.PasswordInput(attrs={"autocomplete": "new-password"})
    )

    def __init__(self, *args: Any, fixed_email: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if fixed_email:
            self.fields["email"].initial = fixed_email
            self.fields["email"].disabled = True
            self.fields["email"].help_text = "The address the invitation was sent to."

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("password1") and data.get("password1") != data.get("password2"):
            self.add_error("password2", "The two passwords differ.")
        return data
