"""Creating studies and managing who belongs to them."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from .models import Membership, Role, Study, User


class StudyError(ValueError):
    """Bad input for a study operation; the message says what and why."""


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


def add_member(study: Study, user: User, role: str) -> tuple[Membership, bool]:
    """Give the user a role in the study, changing it if they have one. Returns (membership, created)."""
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


def create_user(username: str, password: str, *, email: str = "") -> User:
    """Create a user with a validated password; raises StudyError naming what is wrong."""
    from django.contrib.auth.password_validation import validate_password

    if User.objects.filter(username=username).exists():
        raise StudyError(f"A user named {username!r} already exists.")
    user = User(username=username, email=email)
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise StudyError(f"Password for {username!r} refused: {' '.join(exc.messages)}") from exc
    user.set_password(password)
    user.save()
    return user
