"""The per-process cache of codebook indexes (`apps/taxonomy/index.py`): a request reads the codebook row
and gets the index it names without reading dimensions and categories again, and never an index holding
content that another process changed or that a transaction rolled back."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Study, User
from apps.taxonomy import services
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.models import Category, Codebook, Dimension

from .conftest import category

pytestmark = pytest.mark.django_db(transaction=True)  # committed state, as between two requests


class Abort(Exception):
    """Raised inside a transaction to roll it back."""


def test_an_unchanged_codebook_is_read_in_one_query(
    study: Study, codebook: Codebook, django_assert_num_queries: Any
) -> None:
    first = CodebookIndex.for_study(study)
    with django_assert_num_queries(1):
        again = CodebookIndex.for_study(study)
    assert again is first


def test_a_change_made_by_a_service_is_seen_at_once(study: Study, codebook: Codebook, lead: User) -> None:
    before = CodebookIndex.for_study(study)
    services.rename_category(category(study, "hang"), "Deadlock", actor=lead)
    after = CodebookIndex.for_study(study)
    assert after.version == before.version + 1
    assert after.categories[category(study, "hang").pk].name == "Deadlock"


def test_a_proposal_is_seen_by_every_process_although_the_version_stays(
    study: Study, codebook: Codebook, annotator_a: User
) -> None:
    before = CodebookIndex.for_study(study)
    symptom = Dimension.objects.get(codebook=codebook, key="symptom")
    proposal = services.propose_category(symptom, "Out of memory", None, "seen twice", annotator_a)
    book = Codebook.objects.get(pk=codebook.pk)
    assert book.version == before.version
    assert (book.version, book.updated_at) != (before.version, codebook.updated_at)
    assert proposal.category.pk in CodebookIndex.for_study(study).categories


def test_a_write_by_another_process_is_seen_once_the_codebook_row_changes(
    study: Study, codebook: Codebook
) -> None:
    hang = category(study, "hang")
    CodebookIndex.for_study(study)
    # Another process: no signals here, only the rows (what the services write).
    Category.objects.filter(pk=hang.pk).update(name="Stalled")
    Codebook.objects.filter(pk=codebook.pk).update(version=codebook.version + 1, updated_at=timezone.now())
    assert CodebookIndex.for_study(study).categories[hang.pk].name == "Stalled"


def test_a_rolled_back_change_leaves_no_trace_in_the_cache(
    study: Study, codebook: Codebook, lead: User
) -> None:
    hang = category(study, "hang")
    CodebookIndex.for_study(study)

    with pytest.raises(Abort), transaction.atomic():
        services.rename_category(hang, "Deadlock", actor=lead)
        # Read inside the transaction that wrote: the new name, but kept out of the cache.
        assert CodebookIndex.for_study(study).categories[hang.pk].name == "Deadlock"
        Category.objects.filter(pk=hang.pk).update(name="Half-written")
        assert CodebookIndex.for_study(study).categories[hang.pk].name == "Half-written"
        raise Abort

    with transaction.atomic():  # the rollback ended the write's mark: the next transaction uses the cache
        first = CodebookIndex.for_study(study)
        assert first.categories[hang.pk].name == "Hang"
        assert CodebookIndex.for_study(study) is first


def test_after_a_transaction_that_wrote_a_codebook_the_next_ones_use_the_cache_again(
    study: Study, codebook: Codebook, lead: User, django_assert_num_queries: Any
) -> None:
    """A worker process's request that edits a codebook must not leave every later request of that process
    reading the codebook from the database (the mark used to outlive its transaction until a read outside
    any: every API submission, which reads inside its transaction, paid 2 queries for it)."""
    with transaction.atomic():
        services.rename_category(category(study, "hang"), "Deadlock", actor=lead)
    with transaction.atomic():  # the next request, in its transaction
        first = CodebookIndex.for_study(study)
        with django_assert_num_queries(1):
            assert CodebookIndex.for_study(study) is first


def test_a_savepoint_rolled_back_after_the_write_keeps_the_cache_out_until_the_end(
    study: Study, codebook: Codebook, lead: User
) -> None:
    hang = category(study, "hang")
    CodebookIndex.for_study(study)

    with pytest.raises(Abort), transaction.atomic():
        services.rename_category(hang, "Deadlock", actor=lead)
        with pytest.raises(Abort), transaction.atomic():  # a savepoint after the write, rolled back
            raise Abort
        read = CodebookIndex.for_study(study)
        assert read.categories[hang.pk].name == "Deadlock"
        assert CodebookIndex.for_study(study) is not read  # still read around the cache
        raise Abort
    assert CodebookIndex.for_study(study).categories[hang.pk].name == "Hang"


def test_a_later_transaction_that_writes_is_marked_anew(study: Study, codebook: Codebook, lead: User) -> None:
    """The mark of a transaction that ended by a rollback is left on the connection: the next transaction
    that writes a codebook must still read around the cache."""
    hang = category(study, "hang")

    for name in ("Deadlock", "Stalled"):
        with pytest.raises(Abort), transaction.atomic():
            services.rename_category(hang, name, actor=lead)
            read = CodebookIndex.for_study(study)
            assert read.categories[hang.pk].name == name
            assert CodebookIndex.for_study(study) is not read
            raise Abort
    assert CodebookIndex.for_study(study).categories[hang.pk].name == "Hang"
