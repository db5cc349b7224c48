"""The context every study page shares (study, role, which tab is current)."""

from __future__ import annotations

from typing import Any

LEAD_ROLE_NAMES = frozenset({"lead", "owner"})


def study_context(study: Any, role: str, nav: str, **extra: Any) -> dict[str, Any]:
    return {"study": study, "role": role, "is_lead": role in LEAD_ROLE_NAMES, "nav": nav, **extra}
