"""`CodebookIndex`: one constant-size read of a study's codebook, and the lookups other apps rely on."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.accounts.models import Study, User
from apps.taxonomy import services
from apps.taxonomy.codebook_spec import codebook_from_data
from apps.taxonomy.index import CodebookIndex, UnknownDimensionError
from apps.taxonomy.models import Codebook
from apps.taxonomy.tree import AmbiguousLabelError, UnknownLabelError
from tests.taxonomy.conftest import CODEBOOK, category, dimension

pytestmark = pytest.mark.django_db


def test_an_index_is_three_queries_whatever_the_codebook_size(
    study: Study, lead: User, codebook: Codebook
) -> None:
    with CaptureQueriesContext(connection) as small:
        CodebookIndex.for_study(study)
    symptom = dimension(study, "symptom")
    for n in range(30):
        services.add_category(symptom, key=f"extra-{n}", name=f"Extra {n}", actor=lead)
    with CaptureQueriesContext(connection) as large:
        index = CodebookIndex.for_study(study)
    assert len(small.captured_queries) == len(large.captured_queries) == 3
    assert len(index.categories_of("symptom")) == 7 + 30


def test_a_study_without_codebook_gives_an_empty_index(study: Study) -> None:
    index = CodebookIndex.for_study(study)
    assert (index.version, index.dimensions, index.codebook_id) == (0, (), None)
    assert index.snapshot() == {"name": study.name, "dimensions": []}


def test_dimensions_are_ordered_and_found_by_key_or_id(study: Study, codebook: Codebook) -> None:
    index = CodebookIndex.for_study(study)
    assert [d.key for d in index.dimensions] == ["issue-type", "symptom"]
    symptom = index.dimension("symptom")
    assert index.dimension(symptom.id) == symptom
    assert symptom.multiple and symptom.applies_when == ("issue-type", "fault")
    with pytest.raises(
        UnknownDimensionError, match="unknown dimension 'fix' \\(known: issue-type, symptom\\)"
    ):
        index.dimension("fix")


def test_resolve_accepts_keys_paths_and_names_case_insensitively(study: Study, codebook: Codebook) -> None:
    index = CodebookIndex.for_study(study)
    hang = category(study, "hang").pk
    assert index.resolve("symptom", "hang") == hang
    assert index.resolve("symptom", "training & evaluation > program failure > HANG") == hang
    assert index.resolve("symptom", "Program Failure > Hang") == hang
    assert index.resolve("symptom", "  hang ") == hang
    with pytest.raises(
        UnknownLabelError, match="did you mean 'Training & Evaluation > Program Failure > Hang'"
    ):
        index.resolve("symptom", "Hnag")


def test_an_ambiguous_name_lists_its_candidates(study: Study, lead: User, codebook: Codebook) -> None:
    services.add_category(
        dimension(study, "symptom"),
        key="setup-hang",
        name="Hang",
        parent=category(study, "setup"),
        actor=lead,
    )
    index = CodebookIndex.for_study(study)
    with pytest.raises(AmbiguousLabelError) as caught:
        index.resolve("symptom", "Hang")  # a name, not the key "hang"
    assert caught.value.candidates == ["Setup > Hang", "Training & Evaluation > Program Failure > Hang"]
    assert index.resolve("symptom", "Setup > Hang") == category(study, "setup-hang").pk


def test_retired_categories_resolve_by_key_only_and_keep_their_path(
    study: Study, lead: User, codebook: Codebook
) -> None:
    slow = category(study, "slow")
    services.retire_category(slow, actor=lead)
    index = CodebookIndex.for_study(study)
    assert index.resolve("symptom", "slow") == slow.pk
    with pytest.raises(UnknownLabelError):
        index.resolve("symptom", "Training & Evaluation > Slow")
    assert index.resolve("symptom", "Training & Evaluation > Slow", active_only=False) == slow.pk
    assert index.path(slow.pk) == "Training & Evaluation > Slow"
    assert "slow" not in [c.key for c in index.categories_of("symptom")]


def test_paths_depths_and_levels(study: Study, codebook: Codebook) -> None:
    index = CodebookIndex.for_study(study)
    hang, training = category(study, "hang").pk, category(study, "training").pk
    assert index.path_names(hang) == ["Training & Evaluation", "Program Failure", "Hang"]
    assert index.depth(hang) == 3
    assert index.ancestor_at_depth(hang, 1) == training
    assert index.ancestor_at_depth(hang, 2) == category(study, "program-failure").pk
    assert index.ancestor_at_depth(hang, 5) == hang
    with pytest.raises(ValueError, match="depth must be 1 or more"):
        index.ancestor_at_depth(hang, 0)


def test_conditional_dimensions_apply_for_the_category_and_its_descendants(
    study: Study, lead: User, codebook: Codebook
) -> None:
    services.add_category(
        dimension(study, "issue-type"),
        key="crash-bug",
        name="Crash bug",
        parent=category(study, "fault", "issue-type"),
        actor=lead,
    )
    services.add_dimension(codebook, key="fix", name="Fix", applies_when=category(study, "hang"), actor=lead)
    index = CodebookIndex.for_study(study)
    fault = category(study, "fault", "issue-type").pk
    keys = lambda values: [d.key for d in index.applicable_dimensions(values)]  # noqa: E731
    assert keys({}) == ["issue-type"]
    assert keys({"issue-type": "howto"}) == ["issue-type"]
    assert keys({"issue-type": fault}) == ["issue-type", "symptom"]
    assert keys({"issue-type": "crash-bug"}) == ["issue-type", "symptom"]
    assert keys({"issue-type": fault, "symptom": [category(study, "crash").pk, "hang"]}) == [
        "issue-type",
        "symptom",
        "fix",
    ]
    # fix depends on symptom, which does not apply to a how-to: neither does fix.
    assert keys({"issue-type": "howto", "symptom": "hang"}) == ["issue-type"]


def test_options_are_the_active_tree_plus_the_users_own_proposals(
    study: Study, codebook: Codebook, annotator_a: User, annotator_b: User
) -> None:
    mine = services.propose_category(
        dimension(study, "symptom"), "Deadlock", category(study, "program-failure"), "", annotator_a
    ).category
    index = CodebookIndex.for_study(study)
    options = [(c.key, depth) for c, depth in index.options("symptom", annotator_a.pk)]
    assert options[:5] == [("training", 1), ("program-failure", 2), ("hang", 3), ("crash", 3), (mine.key, 3)]
    assert mine.key not in [c.key for c, _ in index.options("symptom", annotator_b.pk)]


def test_snapshot_is_the_file_format_of_the_active_codebook(study: Study, codebook: Codebook) -> None:
    index = CodebookIndex.for_study(study)
    assert index.version == 1
    assert codebook_from_data(index.snapshot()) == codebook_from_data(CODEBOOK)
