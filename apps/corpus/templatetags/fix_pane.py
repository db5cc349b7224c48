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
def fix_evidence_for(item: Item, comments: Iterable[ItemComment] | str | None = None) -> list[FixEvidence]:
    """`comments`: the thread the page already read (its QuerySet is evaluated once, then cached)."""
    # A page without `comments` passes "" (the template engine's missing value): read them here then.
    # An empty thread is still the thread: no second query for an item without comments.
    return fix_evidence(item, None if isinstance(comments, str) else comments)
