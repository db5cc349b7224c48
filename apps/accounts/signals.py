"""Signals accounts sends for the apps above it (docs/architecture.md, "Apps and the direction of
dependencies")."""

from django.dispatch import Signal

member_removed = Signal()
"""Sent inside `services.remove_member`'s transaction, after the membership is deleted, with ``study``
and ``user``. A receiver moves what the member held in its own tables (annotation returns their open
assignments to the pool) and returns how many of those it moved, or None."""
