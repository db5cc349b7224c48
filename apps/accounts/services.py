"""Creating studies and managing who belongs to them."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from .models import Membership, Role, Study, User


class StudyError(ValueError):
    """Bad input for a study operation; the message says what and why."""


def create_study(
    *, slug: str, name: str, overlap: int = 2, description: str = "", owner: User | None = None
) -> Study:
    """Create a study; its creator (if given) becomes its owner. Refuses an existing or invalid slug."""
    if slugify(slug) != slug or not slug:
        raise StudyError(f"Invalid study slug {slug!r}: use lowercase letters, digits and hyphens.")
    if overlap < 1:
        raise StudyError(f"--overlap must be at least 1 (got {overlap}).")
    if not name.strip():
        raise StudyError("A study needs a name.")
    with transaction.atomic():
        if Study.objects.filter(slug=slug).exists():
            raise StudyError(f"A study with the slug {slug!r} already exists.")
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
