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
