"""Codebook editing services against the real database: every operation, its record, version and snapshot,
labels and gold labels following merges, splits and rejections, and the refusals."""

from __future__ import annotations

from typing import Any

import pytest

from apps.accounts.models import Study, User
from apps.adjudication.models import DecisionValue
from apps.annotation.models import LabelValue
from apps.taxonomy import services, signals
from apps.taxonomy.index import CodebookIndex
from apps.taxonomy.models import (
    Category,
    CategoryStatus,
    ChangeKind,
    Codebook,
    CodebookChange,
    CodebookVersion,
)
from apps.taxonomy.services import CodebookEditError, NewCategory
from tests.taxonomy.conftest import category, dimension, put_gold, put_label

pytestmark = pytest.mark.django_db


def _kinds(book: Codebook, version: int) -> list[str]:
    return list(CodebookChange.objects.filter(codebook=book, version=version).values_list("kind", flat=True))


def _snapshot_names(book: Codebook) -> list[str]:
    """Category names of the symptom dimension in the latest snapshot, depth-first."""
    snapshot = CodebookVersion.objects.get(codebook=book, number=book.version).snapshot
    symptom = next(d for d in snapshot["dimensions"] if d["key"] == "symptom")
    names: list[str] = []

    def walk(nodes: list[dict[str, Any]]) -> None:
        for node in nodes:
            names.append(node["name"])
            walk(node.get("children", []))

    walk(symptom["categories"])
    return names


def test_loading_the_fixture_makes_version_one_with_a_snapshot(codebook: Codebook) -> None:
    assert codebook.version == 1
    assert CodebookVersion.objects.filter(codebook=codebook).count() == 1
    assert _snapshot_names(codebook)[:3] == ["Training & Evaluation", "Program Failure", "Hang"]


def test_current_version_is_zero_before_a_codebook_and_follows_changes(study: Study, lead: User) -> None:
    assert services.current_version(study) == 0
    book = services.get_or_create_codebook(study)
    assert book.name == study.name
    services.add_dimension(book, key="kind", name="Kind", actor=lead)
    assert services.current_version(study) == 1


def test_add_category_records_who_and_raises_the_version(
    study: Study, lead: User, codebook: Codebook
) -> None:
    parent = category(study, "program-failure")
    added = services.add_category(
        parent.dimension, key="oom", name="Out of memory", parent=parent, definition=" GPU OOM ", actor=lead
    )
    codebook.refresh_from_db()
    assert codebook.version == 2
    change = CodebookChange.objects.get(codebook=codebook, version=2)
    assert (change.kind, change.actor, change.category) == (ChangeKind.ADD, lead, added)
    assert change.after["parent"] == "program-failure"
    assert added.definition == "GPU OOM"
    assert added.position == 2  # after hang and crash
    assert "Out of memory" in _snapshot_names(codebook)


def test_add_category_refuses_a_used_key_even_when_retired(
    study: Study, lead: User, codebook: Codebook
) -> None:
    slow = category(study, "slow")
    services.retire_category(slow, actor=lead)
    with pytest.raises(CodebookEditError, match=r"key 'slow' is already used by “Slow” \(retired\)"):
        services.add_category(slow.dimension, key="slow", name="Slowness", actor=lead)
    codebook.refresh_from_db()
    assert codebook.version == 2  # the refusal wrote nothing


def test_add_category_refuses_a_sibling_name_and_bad_keys(
    study: Study, lead: User, codebook: Codebook
) -> None:
    symptom = dimension(study, "symptom")
    with pytest.raises(CodebookEditError, match="already has a category named “Setup”"):
        services.add_category(symptom, key="setup-2", name="  setup ", actor=lead)
    with pytest.raises(CodebookEditError, match="must start with a lower-case letter"):
        services.add_category(symptom, key="Bad Key", name="Bad", actor=lead)
    with pytest.raises(CodebookEditError, match="cannot contain '>'"):
        services.add_category(symptom, key="gt", name="A > B", actor=lead)


def test_rename_and_edit_make_two_changes_in_one_version(
    study: Study, lead: User, codebook: Codebook
) -> None:
    hang = category(study, "hang")
    services.edit_category(
        hang, name="Hang or deadlock", definition="Stops progressing.", examples=["a", " ", "b "], actor=lead
    )
    codebook.refresh_from_db()
    assert codebook.version == 2
    changes = {c.kind: c for c in CodebookChange.objects.filter(codebook=codebook, version=2)}
    assert changes[ChangeKind.RENAME].before == {"name": "Hang"}
    assert changes[ChangeKind.RENAME].after == {"name": "Hang or deadlock"}
    assert changes[ChangeKind.EDIT].after == {"definition": "Stops progressing.", "examples": ["a", "b"]}
    assert "Hang or deadlock" in _snapshot_names(codebook)


def test_saving_unchanged_fields_changes_nothing(study: Study, lead: User, codebook: Codebook) -> None:
    hang = category(study, "hang")
    services.edit_category(hang, name="Hang", definition="The job stops progressing.", actor=lead)
    codebook.refresh_from_db()
    assert codebook.version == 1


def test_move_puts_the_subtree_under_the_new_parent_last(
    study: Study, lead: User, codebook: Codebook
) -> None:
    failure = category(study, "program-failure")
    services.move_category(failure, category(study, "setup"), actor=lead)
    index = CodebookIndex.for_study(study)
    assert index.path(category(study, "hang").pk) == "Setup > Program Failure > Hang"
    assert [c.key for c in index.categories_of("symptom")] == [
        "training",
        "slow",
        "setup",
        "install",
        "program-failure",
        "hang",
        "crash",
    ]
    change = CodebookChange.objects.get(codebook=codebook, version=2)
    assert change.before == {"parent": "training", "position": 0}
    assert change.after == {"parent": "setup", "position": 1}


def test_move_under_its_own_descendant_is_refused(study: Study, lead: User, codebook: Codebook) -> None:
    training = category(study, "training")
    with pytest.raises(CodebookEditError, match="which lies inside it"):
        services.move_category(training, category(study, "hang"), actor=lead)
    with pytest.raises(CodebookEditError, match="under itself"):
        services.move_category(training, training, actor=lead)
    codebook.refresh_from_db()
    assert codebook.version == 1


def test_reorder_swaps_with_the_neighbour_and_stops_at_the_ends(
    study: Study, lead: User, codebook: Codebook
) -> None:
    services.reorder_category(category(study, "crash"), "up", actor=lead)
    index = CodebookIndex.for_study(study)
    assert [c.name for c in index.categories_of("symptom")][1:4] == ["Program Failure", "Crash", "Hang"]
    services.reorder_category(category(study, "crash"), "up", actor=lead)  # already first
    codebook.refresh_from_db()
    assert codebook.version == 2
    assert _kinds(codebook, 2) == [ChangeKind.REORDER]


def test_merge_moves_labels_and_gold_labels_and_keeps_the_original(
    study: Study, lead: User, annotator_a: User, annotator_b: User, codebook: Codebook
) -> None:
    hang, crash = category(study, "hang"), category(study, "crash")
    label_a = put_label(study, annotator_a, hang)
    label_b = put_label(study, annotator_b, hang)
    gold = put_gold(study, hang)
    other = put_label(study, annotator_a, crash)
    heard: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        heard.append(kwargs)

    signals.categories_merged.connect(receiver)
    try:
        moved = services.merge_category(hang, crash, actor=lead)
    finally:
        signals.categories_merged.disconnect(receiver)
    assert (moved.labels, moved.decisions) == (2, 1)
    for row in (label_a, label_b, other):
        row.refresh_from_db()
    gold.refresh_from_db()
    assert (label_a.category, label_a.original_category) == (crash, hang)
    assert (gold.category, gold.original_category) == (crash, hang)
    assert other.original_category is None  # labels already on the target are untouched
    hang.refresh_from_db()
    assert (hang.status, hang.merged_into) == (CategoryStatus.MERGED, crash)
    assert [(h["source"], h["target"]) for h in heard] == [(hang, crash)]
    assert "Hang" not in _snapshot_names(Codebook.objects.get(pk=codebook.pk))


def test_merge_keeps_an_original_set_by_an_earlier_merge(
    study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    hang, crash, slow = category(study, "hang"), category(study, "crash"), category(study, "slow")
    label = put_label(study, annotator_a, hang)
    services.merge_category(hang, crash, actor=lead)
    services.merge_category(crash, slow, actor=lead)
    label.refresh_from_db()
    assert (label.category, label.original_category) == (slow, hang)


def test_merge_drops_a_duplicate_when_the_finding_already_holds_the_target(
    study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    hang, crash = category(study, "hang"), category(study, "crash")
    on_hang = put_label(study, annotator_a, hang)
    on_crash = put_label(study, annotator_a, crash, item=on_hang.finding.annotation.assignment.item)
    moved = services.merge_category(hang, crash, actor=lead)
    assert moved.dropped_labels == (on_hang.pk,)
    assert list(LabelValue.objects.filter(finding=on_hang.finding).values_list("category", flat=True)) == [
        crash.pk
    ]
    change = CodebookChange.objects.get(codebook=codebook, kind=ChangeKind.MERGE)
    assert change.after["labels_dropped"] == [on_hang.pk]
    assert on_crash.pk in LabelValue.objects.values_list("pk", flat=True)


def test_merge_moves_children_and_conditions_to_the_target(
    study: Study, lead: User, codebook: Codebook
) -> None:
    fault, howto = category(study, "fault", "issue-type"), category(study, "howto", "issue-type")
    services.merge_category(category(study, "program-failure"), category(study, "setup"), actor=lead)
    index = CodebookIndex.for_study(study)
    assert index.path(category(study, "hang").pk) == "Setup > Hang"
    services.merge_category(fault, howto, actor=lead)
    assert dimension(study, "symptom").applies_when_category == howto
    codebook.refresh_from_db()
    assert ChangeKind.EDIT_DIMENSION in _kinds(codebook, codebook.version)


def test_merge_into_itself_or_a_descendant_is_refused(study: Study, lead: User, codebook: Codebook) -> None:
    training = category(study, "training")
    with pytest.raises(CodebookEditError, match="into itself"):
        services.merge_category(training, training, actor=lead)
    with pytest.raises(CodebookEditError, match="which lies inside it"):
        services.merge_category(training, category(study, "hang"), actor=lead)
    with pytest.raises(CodebookEditError, match="merge only within one dimension"):
        services.merge_category(training, category(study, "fault", "issue-type"), actor=lead)
    codebook.refresh_from_db()
    assert codebook.version == 1


def test_split_creates_the_parts_retires_the_source_and_reassign_moves_chosen_labels(
    study: Study, lead: User, annotator_a: User, annotator_b: User, codebook: Codebook
) -> None:
    slow = category(study, "slow")
    first, second = put_label(study, annotator_a, slow), put_label(study, annotator_b, slow)
    gold = put_gold(study, slow)
    parts = services.split_category(
        slow, [NewCategory("slow-comm", "Slow communication"), NewCategory("slow-io", "Slow I/O")], actor=lead
    )
    slow.refresh_from_db()
    assert slow.status == CategoryStatus.RETIRED
    assert [p.parent for p in parts] == [slow.parent, slow.parent]
    index = CodebookIndex.for_study(study)
    assert [c.key for c in index.categories_of("symptom")][:6] == [
        "training",
        "program-failure",
        "hang",
        "crash",
        "slow-comm",
        "slow-io",
    ]
    split = CodebookChange.objects.get(codebook=codebook, kind=ChangeKind.SPLIT)
    assert split.after["parts"] == ["slow-comm", "slow-io"]
    assert split.after["labels_to_reassign"] == 2
    assert services.split_parts(slow) == parts

    heard: list[dict[str, Any]] = []
    signals.labels_reassigned.connect(lambda sender, **kw: heard.append(kw), weak=False, dispatch_uid="t")
    try:
        moved = services.reassign_labels(
            slow, parts[0], label_ids=[first.pk], decision_value_ids=[gold.pk], actor=lead
        )
        services.reassign_labels(slow, parts[1], label_ids=[second.pk], actor=lead)
    finally:
        signals.labels_reassigned.disconnect(dispatch_uid="t")
    assert (moved.labels, moved.decisions) == (1, 1)
    first.refresh_from_db()
    second.refresh_from_db()
    gold.refresh_from_db()
    assert (first.category, first.original_category) == (parts[0], slow)
    assert (second.category, second.original_category) == (parts[1], slow)
    assert (gold.category, gold.original_category) == (parts[0], slow)
    assert heard[0]["mapping"] == {first.pk: parts[0].pk}
    assert heard[0]["decision_mapping"] == {gold.pk: parts[0].pk}
    codebook.refresh_from_db()
    assert codebook.version == 4  # split, then two reassignments


def test_reassign_refuses_labels_that_are_not_on_the_source(
    study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    elsewhere = put_label(study, annotator_a, category(study, "crash"))
    with pytest.raises(CodebookEditError, match=f"labels {elsewhere.pk} are not on “Hang”"):
        services.reassign_labels(
            category(study, "hang"), category(study, "slow"), label_ids=[elsewhere.pk], actor=lead
        )
    with pytest.raises(CodebookEditError, match="at least one label"):
        services.reassign_labels(category(study, "hang"), category(study, "slow"), actor=lead)


def test_split_refuses_a_category_with_subcategories_and_duplicate_parts(
    study: Study, lead: User, codebook: Codebook
) -> None:
    with pytest.raises(CodebookEditError, match=r"has subcategories \(Hang, Crash\)"):
        services.split_category(
            category(study, "program-failure"), [NewCategory("a", "A"), NewCategory("b", "B")], actor=lead
        )
    with pytest.raises(CodebookEditError, match="Two new categories have the key 'a'"):
        services.split_category(
            category(study, "slow"), [NewCategory("a", "A"), NewCategory("a", "B")], actor=lead
        )
    with pytest.raises(CodebookEditError, match="Symptom applies only when “Fault” is chosen"):
        services.split_category(
            category(study, "fault", "issue-type"), [NewCategory("a", "A"), NewCategory("b", "B")], actor=lead
        )
    with pytest.raises(CodebookEditError, match="at least two"):
        services.split_category(category(study, "slow"), [NewCategory("a", "A")], actor=lead)
    assert category(study, "slow").status == CategoryStatus.ACTIVE


def test_retire_takes_the_subtree_and_keeps_labels_and_restore_brings_it_back(
    study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    failure = category(study, "program-failure")
    label = put_label(study, annotator_a, category(study, "hang"))
    retired = services.retire_category(failure, actor=lead)
    assert [c.key for c in retired] == ["program-failure", "hang", "crash"]
    label.refresh_from_db()
    assert label.category.key == "hang"  # labels stay on retired categories
    assert (
        Category.objects.filter(dimension=failure.dimension)
        .pickable_by(annotator_a)
        .filter(key="hang")
        .count()
        == 0
    )
    assert "Program Failure" not in _snapshot_names(Codebook.objects.get(pk=codebook.pk))
    with pytest.raises(CodebookEditError, match="restore the parent first"):
        services.restore_category(category(study, "hang"), actor=lead)
    services.restore_category(failure, actor=lead)
    assert category(study, "program-failure").status == CategoryStatus.ACTIVE
    assert category(study, "hang").status == CategoryStatus.RETIRED


def test_retiring_a_category_a_dimension_depends_on_is_refused(
    study: Study, lead: User, codebook: Codebook
) -> None:
    with pytest.raises(CodebookEditError, match="Symptom applies only when “Fault”"):
        services.retire_category(category(study, "fault", "issue-type"), actor=lead)


def test_delete_is_refused_for_a_used_category_and_allowed_for_an_unused_one(
    study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    hang = category(study, "hang")
    put_label(study, annotator_a, hang)
    with pytest.raises(CodebookEditError, match=r"it has 1 labels\. Retire it instead"):
        services.delete_category(hang, actor=lead)
    with pytest.raises(CodebookEditError, match="2 subcategories"):
        services.delete_category(category(study, "program-failure"), actor=lead)
    services.delete_category(category(study, "crash"), actor=lead)
    assert not Category.objects.filter(key="crash").exists()
    change = CodebookChange.objects.get(codebook=codebook, version=2)
    assert change.after == {"deleted": True}
    assert change.before["key"] == "crash"


def test_proposal_is_pickable_by_its_author_only_and_warns_of_near_duplicates(
    study: Study, lead: User, annotator_a: User, annotator_b: User, codebook: Codebook
) -> None:
    symptom = dimension(study, "symptom")
    proposal = services.propose_category(
        symptom, "Hangs", category(study, "program-failure"), "Stuck in allreduce", annotator_a
    )
    assert proposal.created
    assert proposal.category.status == CategoryStatus.PROPOSED
    assert proposal.category.key == "hangs"
    assert proposal.warnings == (
        "Similar to the existing category “Training & Evaluation > Program Failure > Hang”: "
        "is it the same code?",
    )
    pickable = Category.objects.filter(dimension=symptom)
    assert pickable.pickable_by(annotator_a).filter(pk=proposal.category.pk).exists()
    assert not pickable.pickable_by(annotator_b).filter(pk=proposal.category.pk).exists()
    codebook.refresh_from_db()
    assert codebook.version == 1  # a proposal does not change the shared codebook
    change = CodebookChange.objects.get(kind=ChangeKind.PROPOSE)
    assert (change.version, change.actor) == (1, annotator_a)


def test_proposing_twice_returns_the_open_proposal_and_keys_stay_unique(
    study: Study, annotator_a: User, annotator_b: User, codebook: Codebook
) -> None:
    symptom = dimension(study, "symptom")
    first = services.propose_category(symptom, "NCCL timeout", None, "", annotator_a)
    again = services.propose_category(symptom, "nccl  timeout", None, "", annotator_a)
    other = services.propose_category(symptom, "NCCL timeout", None, "", annotator_b)
    assert (again.created, again.category) == (False, first.category)
    assert other.category.key == "nccl-timeout-2"
    assert any("NCCL timeout" in w for w in other.warnings)


def test_accepting_a_proposal_makes_it_active(
    study: Study, lead: User, annotator_a: User, annotator_b: User, codebook: Codebook
) -> None:
    proposal = services.propose_category(dimension(study, "symptom"), "NCCL timeout", None, "", annotator_a)
    services.accept_proposal(proposal.category, actor=lead)
    accepted = category(study, "nccl-timeout")
    assert accepted.status == CategoryStatus.ACTIVE
    assert Category.objects.pickable_by(annotator_b).filter(pk=accepted.pk).exists()
    codebook.refresh_from_db()
    assert _kinds(codebook, 2) == [ChangeKind.ACCEPT]
    assert "NCCL timeout" in _snapshot_names(codebook)


def test_merging_a_proposal_moves_its_labels(
    study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    proposal = services.propose_category(dimension(study, "symptom"), "Stuck", None, "", annotator_a)
    label = put_label(study, annotator_a, proposal.category)
    services.merge_category(proposal.category, category(study, "hang"), actor=lead)
    label.refresh_from_db()
    assert (label.category.key, label.original_category) == ("hang", proposal.category)


def test_rejecting_a_proposal_moves_labels_where_the_lead_says(
    study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    proposal = services.propose_category(dimension(study, "symptom"), "Weird", None, "", annotator_a)
    label = put_label(study, annotator_a, proposal.category)
    with pytest.raises(CodebookEditError, match="choose the category they move to"):
        services.reject_proposal(proposal.category, None, actor=lead)
    services.reject_proposal(proposal.category, category(study, "crash"), actor=lead)
    label.refresh_from_db()
    assert (label.category.key, label.original_category) == ("crash", proposal.category)
    assert Category.objects.get(pk=proposal.category.pk).status == CategoryStatus.REJECTED


def test_dimension_add_edit_and_condition_cycles(study: Study, lead: User, codebook: Codebook) -> None:
    fix = services.add_dimension(
        codebook, key="fix", name="Fix pattern", applies_when=category(study, "crash"), actor=lead
    )
    index = CodebookIndex.for_study(study)
    assert index.dimension("fix").applies_when == ("symptom", "crash")
    with pytest.raises(CodebookEditError, match="cycle"):
        services.edit_dimension(
            dimension(study, "issue-type"), applies_when=category(study, "hang"), actor=lead
        )
    services.edit_dimension(fix, name="Fix", multiple=True, applies_when=None, actor=lead)
    fix.refresh_from_db()
    assert (fix.name, fix.multiple, fix.applies_when_category) == ("Fix", True, None)
    with pytest.raises(CodebookEditError, match="already used by Fix"):
        services.add_dimension(codebook, key="fix", name="Again", actor=lead)


def test_a_dimension_cannot_become_single_choice_while_findings_hold_several(
    study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    first = put_label(study, annotator_a, category(study, "hang"))
    put_label(study, annotator_a, category(study, "crash"), item=first.finding.annotation.assignment.item)
    with pytest.raises(CodebookEditError, match="1 finding"):
        services.edit_dimension(dimension(study, "symptom"), multiple=False, actor=lead)


def test_retiring_a_dimension_others_depend_on_is_refused(
    study: Study, lead: User, codebook: Codebook
) -> None:
    with pytest.raises(CodebookEditError, match="Symptom applies only when a category of Issue type"):
        services.retire_dimension(dimension(study, "issue-type"), actor=lead)
    services.retire_dimension(dimension(study, "symptom"), actor=lead)
    assert [d.key for d in CodebookIndex.for_study(study).dimensions] == ["issue-type"]


def test_reordering_dimensions(study: Study, lead: User, codebook: Codebook) -> None:
    services.reorder_dimension(dimension(study, "symptom"), "up", actor=lead)
    assert [d.key for d in CodebookIndex.for_study(study).dimensions] == ["symptom", "issue-type"]


def test_every_change_rolls_back_whole_when_a_receiver_fails(
    study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    label = put_label(study, annotator_a, category(study, "hang"))

    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("adjudication is down")

    signals.categories_merged.connect(broken)
    try:
        with pytest.raises(RuntimeError):
            services.merge_category(category(study, "hang"), category(study, "crash"), actor=lead)
    finally:
        signals.categories_merged.disconnect(broken)
    label.refresh_from_db()
    assert label.category.key == "hang"
    assert category(study, "hang").status == CategoryStatus.ACTIVE
    codebook.refresh_from_db()
    assert codebook.version == 1
    assert DecisionValue.objects.count() == 0
