"""factory_boy factories for the domain; tests build what they need and nothing else."""

from __future__ import annotations

import factory

from apps.accounts.models import Membership, Role, Study, User
from apps.corpus.models import Item, Source


class UserFactory(factory.django.DjangoModelFactory[User]):
    class Meta:
        model = User
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("correct-horse-battery")


class StudyFactory(factory.django.DjangoModelFactory[Study]):
    class Meta:
        model = Study

    slug = factory.Sequence(lambda n: f"study-{n}")
    name = factory.Sequence(lambda n: f"Study {n}")
    overlap = 2


class MembershipFactory(factory.django.DjangoModelFactory[Membership]):
    class Meta:
        model = Membership

    user = factory.SubFactory(UserFactory)
    study = factory.SubFactory(StudyFactory)
    role = Role.ANNOTATOR


class ItemFactory(factory.django.DjangoModelFactory[Item]):
    class Meta:
        model = Item

    study = factory.SubFactory(StudyFactory)
    url = factory.Sequence(lambda n: f"https://github.com/example/repo/issues/{n}")
    source = Source.GITHUB
    external_id = factory.Sequence(lambda n: str(n))
    title = factory.Sequence(lambda n: f"Example issue {n}")
