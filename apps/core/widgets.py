"""Form widgets that render in Python what Django renders with a template per option.

Django's `Select` renders each option through its own template include: about 10 µs an option, so a
filter form whose category select lists a large codebook (a thousand options) spends 10-25 ms of a page
on its selects. :class:`QuickSelect` gives the HTML Django's `Select` gives through the Django template
engine, character for character, built with string joins (tests/core/test_widgets.py holds the two
equal; the site's other widgets render through Jinja2's copies of those templates, FORM_RENDERER).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe


def _attrs(attrs: dict[str, Any]) -> str:
    """`django/forms/widgets/attrs.html`: ` name="value"`, a bare ` name` for True, nothing for False."""
    out = []
    for name, value in attrs.items():
        if value is False:
            continue
        out.append(f" {name}" if value is True else f' {name}="{conditional_escape(str(value))}"')
    return "".join(out)


class QuickSelect(forms.Select):
    """A single-choice `<select>` rendered in Python; the same markup as `forms.Select`."""

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        context = forms.Widget.get_context(self, name, value, attrs)["widget"]
        values = set(self.format_value(value))
        selected_once = False
        parts = [f'<select name="{conditional_escape(name)}"{_attrs(context["attrs"])}>']
        for option_value, option_label in self.choices:
            if option_value is None:
                option_value = ""
            if isinstance(option_label, (list, tuple)):
                group, options = option_value, option_label
                if group:
                    parts.append(f'\n  <optgroup label="{conditional_escape(group)}">')
            else:
                group, options = None, [(option_value, option_label)]
            for sub_value, sub_label in options:
                text = str(sub_value)
                chosen = not selected_once and text in values
                selected_once = selected_once or chosen
                parts.append(
                    f'\n  <option value="{conditional_escape(text)}"{" selected" if chosen else ""}>'
                    f"{conditional_escape(sub_label)}</option>\n"
                )
            if group:
                parts.append("\n  </optgroup>")
        parts.append("\n</select>")
        return mark_safe("".join(parts))
