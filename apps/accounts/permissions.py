"""Permission predicates shared by pages (decorators) and the API (DRF permissions).

Every check is a query on Membership, so a view cannot forget to scope: pages fetch studies through
`access_study`, which 404s for non-members (an outsider cannot even learn a study exists).
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from apps.core.sql import Statement, columns, instance

from .backends import REQUEST_WRITES, REQUEST_WROTE, STUDY_ACCESS
from .models import Membership, Role, Study, User

LEAD_ROLES = frozenset({Role.LEAD, Role.OWNER})

# Run by every study page and API call: written by hand, as the ORM form costs ~1.5 ms of Python to build
# (apps/core/sql.py). The role first, then the study's columns.
_MEMBERSHIP = Statement(
    "taxonomist_membership",
    f'SELECT m.role, {columns(Study, "s")} FROM "{Membership._meta.db_table}" m '
    f'JOIN "{Study._meta.db_table}" s ON s.id = m.study_id WHERE m.user_id = %(user)s AND s.slug = %(slug)s',
    {"user": "bigint", "slug": "varchar"},
)


class StudyArchived(PermissionDenied):
    """A write to an archived study: pages answer 403 with this message, the API 403 with it as `detail`."""

    def __init__(self, study: Study) -> None:
        super().__init__(archived_message(study))


def archived_message(study: Study) -> str:
    return f"Study {study.slug} is archived: unarchive it in Settings to change it."


def role_in(user: User | AnonymousUser, study: Study) -> str | None:
    """The user's role in the study, or None for non-members and anonymous users."""
    if not user.is_authenticated:
        return None
    return Membership.objects.filter(user=user, study=study).values_list("role", flat=True).first()


def can_lead(user: User | AnonymousUser, study: Study) -> bool:
    """Leads and owners run the study: import, codebook, rounds, adjudication."""
    return role_in(user, study) in LEAD_ROLES


def can_adjudicate(user: User | AnonymousUser, study: Study) -> bool:
    return can_lead(user, study)


def access_study(
    user: User | AnonymousUser, slug: str, *, lead: bool = False, archived_ok: bool = False
) -> tuple[Study, str]:
    """The study and the user's role, or 404 for non-members; 403 when `lead` is asked of an annotator.

    An archived study is read-only: when the request being served writes (`backends.REQUEST_WRITES`, set
    by the middleware from its method), `StudyArchived` (403, "unarchive it in Settings") is raised after
    the membership and role checks, so an outsider still gets 404. `archived_ok` is for the few writes an
    archived study takes: its settings (unarchive), its deletion, and the jobs that only read it
    (exports, agreement). Outside a request (commands, tests) nothing is refused here: commands use
    `commands.get_study`."""
    if not user.is_authenticated:
        raise Http404("No such study.")
    # Read with the user on this study's URL (backends.py), used once: a later call reads it again.
    prefetched = getattr(user, STUDY_ACCESS, None)  # request.user is lazy: through its proxy
    if prefetched is not None:
        delattr(user, STUDY_ACCESS)
    if prefetched is not None and prefetched[0] == slug:
        _, found, study = prefetched
        if found is None:
            raise Http404("No such study.")
    else:
        row = _MEMBERSHIP.one({"user": user.pk, "slug": slug})
        if row is None:
            raise Http404("No such study.")
        found, study = row[0], instance(Study, row[1:])
    role = str(found)
    if lead and role not in LEAD_ROLES:
        raise PermissionDenied("Only a lead or an owner of this study can do this.")
    if REQUEST_WRITES.get():
        if study.archived_at is not None and not archived_ok:
            raise StudyArchived(study)
        REQUEST_WROTE.set(study.pk)
    return study, role
