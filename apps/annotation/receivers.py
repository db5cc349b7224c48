"""Receivers of signals from the apps below annotation."""

from __future__ import annotations

from typing import Any

from apps.accounts.models import Study, User

from .services.rounds import release_open_assignments


def on_member_removed(sender: Any, *, study: Study, user: User, **kwargs: Any) -> int:
    """A member left the study: their open assignments return to the pool (in the removal's transaction)."""
    return release_open_assignments(study, user)
