"""QuickSelect renders what Django's Select renders through the Django template engine, character for
character (the site's forms render through Jinja2, whose copies of the templates escape a quote as &#34;
and put no blank line between options: the same document)."""

from __future__ import annotations

from django import forms
from django.forms.renderers import DjangoTemplates
from django.utils.translation import gettext_lazy

from apps.core.widgets import QuickSelect

CHOICES = [
    ("", "Any"),
    ("1", "Plain"),
    (2, 'Quotes " and <tags> & ampersands'),
    ("Group <one>", [("3", "\u00a0\u00a0Nested"), (4, gettext_lazy("Lazy label"))]),
    ("", [("5", "In a group without a name")]),
    (None, "None as a value"),
    ("6", "Duplicate value"),
    ("6", "Duplicate value again"),
]


def _both(value, attrs=None, choices=CHOICES):
    return (
        forms.Select(choices=choices).render("field", value, attrs, renderer=DjangoTemplates()),
        QuickSelect(choices=choices).render("field", value, attrs),
    )


def test_quick_select_renders_what_djangos_select_renders_for_every_kind_of_choice():
    for value in (None, "", "1", 2, "3", 4, "5", "6", "missing", ["1", "3"]):
        django, quick = _both(value)
        assert quick == django, value


def test_quick_select_renders_the_attributes_django_renders():
    attrs = {"id": "id_field", "required": True, "disabled": False, "data-x": 'a "b" <c>', "class": "wide"}
    django, quick = _both("1", attrs)
    assert quick == django
    assert "selected" in quick and "required" in quick and "disabled" not in quick


def test_a_form_field_with_a_quick_select_renders_as_with_djangos_select():
    class Plain(forms.Form):
        default_renderer = DjangoTemplates()
        pick = forms.ChoiceField(choices=CHOICES[:4], required=True)

    class Quick(forms.Form):
        pick = forms.ChoiceField(choices=CHOICES[:4], required=True, widget=QuickSelect)

    for data in (None, {"pick": "3"}, {"pick": "nonsense"}):
        assert str(Quick(data)["pick"]) == str(Plain(data)["pick"])
