"""Creating studies and accounts, and managing who belongs to a study.

`set_member_role` is the one way members are added or change role, for the members page, the API and
`add_member`; `remove_member` the one way they leave; `create_user` the one way accounts are made, with
`validate_username`. Invitations are `invitations.py`.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.dispatch import Signal
from django.utils.text import slugify

from .models import Membership, Role, Study, User
from .signals import member_removed


class StudyError(ValueError):
    """Bad input for a study operation; the message says what and why."""


class MembershipRefused(StudyError):
    """The acting member's role may not make this change (the API answers 403)."""


class UnknownUser(StudyError):
    """No account has the username; the interface says how to create one."""


SLUG_MAX_LENGTH = Study._meta.get_field("slug").max_length or 64


def new_slug_problem(slug: str) -> str | None:
    """Why `slug` cannot name a new study, or None. The one slug rule of every way to create a study
    (``create_study``, ``import_study``, the study list page): lowercase ASCII letters, digits, hyphens
    and underscores, starting and ending with a letter or digit, at most 64 characters, and no existing
    study's slug, compared case-insensitively (``Tosem23`` and ``tosem23`` would be two studies that
    people, URLs on a case-insensitive proxy and scripts easily confuse)."""
    if not slug or slugify(slug) != slug:
        return (
            f"Invalid study slug {slug!r}: use lowercase letters, digits, hyphens and underscores, "
            "starting and ending with a letter or digit."
        )
    if len(slug) > SLUG_MAX_LENGTH:
        return f"Invalid study slug {slug!r}: at most {SLUG_MAX_LENGTH} characters (it has {len(slug)})."
    existing = Study.objects.filter(slug__iexact=slug).values_list("slug", flat=True).first()
    if existing == slug:
        return f"A study with the slug {slug!r} already exists."
    if existing is not None:
        return f"The slug {slug!r} differs only in case from the existing study {existing!r}."
    return None


def create_study(
    *, slug: str, name: str, overlap: int = 2, description: str = "", owner: User | None = None
) -> Study:
    """Create a study; its creator (if given) becomes its owner. Refuses an existing or invalid slug."""
    if overlap < 1:
        raise StudyError(f"--overlap must be at least 1 (got {overlap}).")
    if not name.strip():
        raise StudyError("A study needs a name.")
    with transaction.atomic():
        if problem := new_slug_problem(slug):
            raise StudyError(problem)
        study = Study.objects.create(
            slug=slug, name=name.strip(), overlap=overlap, description=description, created_by=owner
        )
        if owner is not None:
            Membership.objects.create(user=owner, study=study, role=Role.OWNER)
    return study


def set_member_role(
    study: Study, username: str, role: str, *, actor: User | None, password: str = ""
) -> tuple[Membership, bool]:
    """Give the user named `username` the `role` in the study, or change theirs; with a `password`, a
    missing account is created first (`create_user`). Returns (membership, created), in one transaction.

    Who may: `actor` None is the command line (the server's operator, who may do anything). An owner may
    do anything. A lead may only add annotators: giving the lead or owner role, or changing the role of a
    lead or an owner (their own included), is for owners (`MembershipRefused`). The last owner stays
    (`add_member`). Raises `UnknownUser` when there is no such account and no password, `StudyError` for
    bad input.
    """
    if role not in Role.values:
        raise StudyError(f"Unknown role {role!r}; choose one of: {', '.join(Role.values)}.")
    with transaction.atomic():
        user = User.objects.filter(username=username).first()
        current = (
            Membership.objects.filter(study=study, user=user).values_list("role", flat=True).first()
            if user is not None
            else None
        )
        check_may_set_role(study, actor, username, current, role)
        if user is None:
            if not password:
                similar = User.objects.filter(username__iexact=username).values_list("username", flat=True)
                hint = f" (did you mean {similar[0]!r}?)" if similar else ""
                raise UnknownUser(f"No user named {username!r}{hint}.")
            user = create_user(username, password)
        return add_member(study, user, role)


def check_may_set_role(
    study: Study, actor: User | None, username: str, current: str | None, role: str
) -> None:
    if actor is None:
        return
    actor_role = Membership.objects.filter(study=study, user=actor).values_list("role", flat=True).first()
    if actor_role == Role.OWNER:
        return
    if actor_role != Role.LEAD:
        raise MembershipRefused("Only a lead or an owner of this study can manage its members.")
    if role == Role.OWNER:
        raise MembershipRefused("Only an owner can make someone an owner.")
    if role == Role.LEAD and current != Role.LEAD:
        raise MembershipRefused("Only an owner can make someone a lead.")
    if current in (Role.LEAD, Role.OWNER) and current != role:
        raise MembershipRefused(f"Only an owner can change the role of {username}, who is {current}.")


def add_member(study: Study, user: User, role: str) -> tuple[Membership, bool]:
    """Give the user a role in the study, changing it if they have one. Returns (membership, created).

    No permission check: interfaces call `set_member_role`; this is for loaders (the demo) and tests."""
    if role not in Role.values:
        raise StudyError(f"Unknown role {role!r}; choose one of: {', '.join(Role.values)}.")
    with transaction.atomic():
        membership, created = Membership.objects.select_for_update().get_or_create(
            study=study, user=user, defaults={"role": role}
        )
        if not created and membership.role != role:
            if membership.role == Role.OWNER and role != Role.OWNER:
                owners = Membership.objects.filter(study=study, role=Role.OWNER).count()
                if owners <= 1:
                    raise StudyError(f"{user} is the study's only owner; make someone else owner first.")
            membership.role = role
            membership.save(update_fields=["role"])
    return membership, created


USERNAME_MAX_LENGTH = User._meta.get_field("username").max_length or 150


def validate_username(username: str) -> str:
    """The username as it will be stored (NFKC-normalised, as Django's User does), or StudyError naming
    what is wrong: Django's username rule (letters, digits and ``@ . + - _`` only, so no space, newline,
    comma, ``<`` or invisible character), at most 150 characters, and no existing account with the same
    name but for case (``Alice`` beside ``alice``). For new accounts; existing ones are looked up as
    they are."""
    name = unicodedata.normalize("NFKC", username)
    if not name:
        raise StudyError("A username cannot be empty.")
    if len(name) > USERNAME_MAX_LENGTH:
        raise StudyError(f"The username {name[:20]!r}… is longer than {USERNAME_MAX_LENGTH} characters.")
    try:
        UnicodeUsernameValidator()(name)
    except ValidationError as exc:
        odd = sorted({c for c in name if not (c.isalnum() or c in "@.+-_")})
        shown = ", ".join(repr(c) if c.isprintable() else f"U+{ord(c):04X}" for c in odd)
        found = f" (found {shown})" if shown else ""
        raise StudyError(
            f"The username {name!r} is not valid: use letters, digits and @ . + - _ only{found}."
        ) from exc
    taken = User.objects.filter(username__iexact=name).values_list("username", flat=True).first()
    if taken is not None:
        same = (
            "already exists" if taken == name else f"already exists as {taken!r} (names differ only by case)"
        )
        raise StudyError(f"A user named {name!r} {same}.")
    return name


def create_user(username: str, password: str, *, email: str = "") -> User:
    """Create a user with a validated username (`validate_username`) and password; raises StudyError
    naming what is wrong."""
    from django.contrib.auth.password_validation import validate_password

    username = validate_username(username)
    user = User(username=username, email=email)
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise StudyError(f"Password for {username!r} refused: {' '.join(exc.messages)}") from exc
    user.set_password(password)
    user.save()
    return user


# --- study settings, archive, delete ---------------------------------------------------------------

SETTINGS_FIELDS = (
    "name",
    "description",
    "overlap",
    "consolidation_rule",
    "show_annotator_names",
    "require_rationale_on_override",
    "reveal_labels_after_decision",
    "discuss_after_reveal",
    "require_guidelines",
)
"""The settings a lead or an owner may change (`update_study_settings`); the slug is the study's identity
in URLs, scripts and packages, and never changes."""


def _actor_role(study: Study, actor: User | None) -> str | None:
    if actor is None:
        return Role.OWNER  # the command line: the server's operator
    return Membership.objects.filter(study=study, user=actor).values_list("role", flat=True).first()


def update_study_settings(study: Study, changes: dict[str, object], *, actor: User | None) -> list[str]:
    """Apply `changes` (a subset of `SETTINGS_FIELDS`, already validated by the form or serializer) to the
    study under its row lock; returns the names of the fields that changed. Leads and owners may
    (`MembershipRefused` otherwise).

    What a change affects: `overlap` is the default of rounds assigned from now on; a round already
    assigned keeps the overlap it was assigned with (`Round.params["assignment"]`), so its assignments and
    its consolidation are untouched. `consolidation_rule` applies to the items consolidated from now on;
    decisions already made stay."""
    unknown = sorted(set(changes) - set(SETTINGS_FIELDS))
    if unknown:
        raise StudyError(f"Not a study setting: {', '.join(unknown)}.")
    if _actor_role(study, actor) not in (Role.LEAD, Role.OWNER):
        raise MembershipRefused("Only a lead or an owner of this study can change its settings.")
    if "name" in changes and not str(changes["name"]).strip():
        raise StudyError("A study needs a name.")
    overlap = changes.get("overlap")
    if overlap is not None and (not isinstance(overlap, int) or overlap < 1):
        raise StudyError(f"The overlap must be at least 1 (got {overlap!r}).")
    with transaction.atomic():
        locked = Study.objects.select_for_update().get(pk=study.pk)
        changed = [name for name, value in changes.items() if getattr(locked, name) != value]
        for name in changed:
            setattr(locked, name, changes[name])
            setattr(study, name, changes[name])
        if changed:
            locked.save(update_fields=changed)
    return changed


def set_archived(study: Study, archived: bool, *, actor: User | None) -> bool:
    """Archive the study (read-only everywhere: `permissions.access_study`, the API, `get_study` of
    commands) or unarchive it. Only owners (`MembershipRefused`). Returns whether anything changed."""
    if _actor_role(study, actor) != Role.OWNER:
        raise MembershipRefused("Only an owner of this study can archive or unarchive it.")
    from django.utils import timezone

    with transaction.atomic():
        locked = Study.objects.select_for_update().get(pk=study.pk)
        if (locked.archived_at is not None) == archived:
            return False
        locked.archived_at = timezone.now() if archived else None
        locked.save(update_fields=["archived_at"])
        study.archived_at = locked.archived_at
    return True


study_deleting = Signal()
"""Sent by `delete_study` inside its transaction, before the study's row goes, with `study=`: the apps
above accounts connect to it to remove the rows that protect one another (a label protects its
category), which a cascade alone refuses (`apps.export.deletion`)."""


def delete_study(study: Study, *, confirm: str, actor: User | None) -> None:
    """Delete the study and everything under it (items, codebook, rounds, labels, decisions, jobs and
    their files) in one transaction: the receivers of `study_deleting` remove the protecting rows, then
    the study's deletion cascades to the rest. Users are kept. `confirm` must be the study's slug, typed
    exactly (`StudyError` otherwise); only owners (`MembershipRefused`); an archived study may be
    deleted."""
    if _actor_role(study, actor) != Role.OWNER:
        raise MembershipRefused("Only an owner of this study can delete it.")
    if confirm != study.slug:
        raise StudyError(f"Type the study's slug, {study.slug}, exactly to delete it (got {confirm!r}).")
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()
        study_deleting.send(sender=Study, study=study)
        Study.objects.filter(pk=study.pk).delete()


@dataclass(frozen=True)
class Removal:
    """What removing a member did: their open assignments returned to the pool (`released`)."""

    username: str
    role: str
    released: int


def remove_member(study: Study, user: User, *, actor: User | None) -> Removal:
    """Remove the user from the study. Their submitted labels stay, attributed to them; their open
    assignments return to the pool (the `member_removed` receivers, in this transaction) for the lead to
    hand out again (assign the round again: it tops items up to the overlap and rebalances).

    Who may: the command line (`actor` None) and an owner remove anyone; a lead removes annotators only
    (`MembershipRefused`). The last owner stays (`StudyError`). Locks the study's owner rows, then the
    member's, so two owners removing each other at once leave one."""
    with transaction.atomic():
        list(Membership.objects.select_for_update().filter(study=study, role=Role.OWNER).order_by("pk"))
        membership = Membership.objects.select_for_update().filter(study=study, user=user).first()
        if membership is None:
            raise StudyError(f"{user.username} is not a member of study {study.slug}.")
        if actor is not None:
            actor_role = (
                Membership.objects.filter(study=study, user=actor).values_list("role", flat=True).first()
            )
            if actor_role not in (Role.LEAD, Role.OWNER):
                raise MembershipRefused("Only a lead or an owner of this study can manage its members.")
            if actor_role == Role.LEAD and membership.role != Role.ANNOTATOR:
                raise MembershipRefused(
                    f"Only an owner can remove {user.username}, who is {membership.role}."
                )
        if membership.role == Role.OWNER:
            owners = Membership.objects.filter(study=study, role=Role.OWNER).count()
            if owners <= 1:
                raise StudyError(f"{user.username} is the study's only owner; make someone else owner first.")
        role = membership.role
        membership.delete()
        answers = member_removed.send(sender=Study, study=study, user=user)
        released = 0
        for _, answer in answers:
            if isinstance(answer, int):
                released += answer
    return Removal(user.username, role, released)
