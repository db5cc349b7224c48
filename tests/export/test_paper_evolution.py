"""Codebook evolution (issue #22 point 2, without the "still right" action): the difference between two
versions in a paper's terms, labels per version, and the re-review worklist."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Study, User
from apps.annotation.models import Annotation
from apps.corpus.models import Item
from apps.export.models import ReReview
from apps.export.paper.data import PaperError
from apps.export.paper.evolution import codebook_evolution, rereview_worklist
from apps.taxonomy.models import Category, CodebookVersion
from apps.taxonomy.services.categories import NewCategory, edit_category, merge_category, split_category

pytestmark = pytest.mark.django_db


def category(study: Study, key: str) -> Category:
    return Category.objects.get(dimension__codebook__study=study, key=key)


def test_the_diff_names_renames_merges_splits_and_redefinitions_and_the_worklist_follows(
    labelled: Study, lead: User
) -> None:
    Annotation.objects.filter(assignment__study=labelled).update(codebook_version=1)
    edit_category(category(labelled, "hang"), name="Hang or deadlock", actor=lead)
    merge_category(category(labelled, "upgrade"), category(labelled, "config"), actor=lead)
    parts = [NewCategory("segv", "SIGSEGV"), NewCategory("abort", "Abort")]
    split_category(category(labelled, "segfault"), parts, actor=lead)
    edit_category(category(labelled, "code"), definition="A change to the program's code.", actor=lead)
    latest = CodebookVersion.objects.filter(codebook__study=labelled).order_by("-number").first()
    assert latest is not None
    result = codebook_evolution(labelled, 1, latest.number)
    kinds = {(c.kind, c.category): c.detail for c in result.changes}
    assert kinds[("renamed", "hang")] == "Hang → Hang or deadlock"
    assert kinds[("merged", "upgrade")] == "into config"
    assert kinds[("split", "segfault")] == "into segv, abort"
    assert kinds[("added", "segv")] == "" and ("added", "abort") in kinds
    assert kinds[("redefined", "code")] == "definition"
    assert result.labels_per_version == {1: 5}
    work = {w.item: w.reasons for w in rereview_worklist(labelled)}
    # Item 1: both annotators chose segfault (split) and code (redefined); item 2: alice chose code.
    assert "https://github.com/o/r/issues/1" in work and "https://stackoverflow.com/questions/2" in work
    assert any(
        "alice labelled segfault on v1; it was split at v" in r
        for r in work["https://github.com/o/r/issues/1"]
    )
    assert all("hang" not in r for reasons in work.values() for r in reasons)  # a rename changes no meaning


def test_an_unknown_version_is_named(labelled: Study) -> None:
    with pytest.raises(PaperError, match="no version 9"):
        codebook_evolution(labelled, 1, 9)


def test_still_right_takes_an_item_off_the_worklist_until_a_later_change(
    labelled: Study, lead: User, lead_client: Client
) -> None:
    Annotation.objects.filter(assignment__study=labelled).update(codebook_version=1)
    edit_category(category(labelled, "oom"), definition="Runs out of device memory.", actor=lead)
    url = "https://stackoverflow.com/questions/2"
    assert [w.item for w in rereview_worklist(labelled)] == [url]  # alice chose oom on item 2
    page = lead_client.get(reverse("export:paper", args=[labelled.slug])).content.decode()
    assert "it was redefined at v2" in page and "Still right" in page
    item = Item.objects.get(study=labelled, url=url)
    assert f'<a href="{reverse("corpus:item-detail", args=[labelled.slug, item.pk])}">{url}</a>' in page
    response = lead_client.post(reverse("export:paper-still-right", args=[labelled.slug, item.pk]))
    assert response.status_code == 302
    assert rereview_worklist(labelled) == []
    assert ReReview.objects.get(item=item).reviewed_by == lead
    edit_category(category(labelled, "oom"), definition="Out of host or device memory.", actor=lead)
    assert [w.item for w in rereview_worklist(labelled)] == [url]  # redefined again since


def test_an_annotator_cannot_mark_still_right(labelled: Study, client: Client, annotator_a: User) -> None:
    client.force_login(annotator_a)
    item = Item.objects.filter(study=labelled).first()
    assert item is not None
    assert client.post(reverse("export:paper-still-right", args=[labelled.slug, item.pk])).status_code == 403
    assert not ReReview.objects.exists()
