"""`{% fix_evidence_for item as links %}`: what the Fix pane shows, for any page that shows an item.

The workbench and the item page include `corpus/_fix-pane.html` with one line; the partial loads its
own data through this tag, so the pages' views need not know about links.
"""

from __future__ import annotations

from collections.abc import Iterable

from django import template

from ..models import Item, ItemComment
from ..services.links import FixEvidence, fix_evidence

register = template.Library()


@register.simple_tag
def fix_evidence_for(item: Item, comments: Iterable[ItemComment] | None = None) -> list[FixEvidence]:
    """`comments`: the thread the page already read (its QuerySet is evaluated once, then cached)."""
    return fix_evidence(item, comments or None)
