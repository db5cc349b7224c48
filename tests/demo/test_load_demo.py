"""The demo study is real (TOSEM 2023 data); `load_demo` never rewrites it, `reset_demo` starts it afresh."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command, get_commands
from django.core.management.base import CommandError

from apps.accounts.models import Membership, Role, Study, User
from apps.adjudication.models import Decision, Provenance, Review, ReviewState
from apps.adjudication.services import decide
from apps.adjudication.status import study_status
from apps.annotation.models import Annotation, Assignment, AssignmentStatus, LabelValue
from apps.annotation.services.labelling import submit_annotation
from apps.corpus.models import ImportJob, ImportKind, Item
from apps.corpus.services.imports import save_upload
from apps.export.services import create_export, export_in_foreground, parse_options, scratch_dir, stored_path
from apps.taxonomy.models import Category, CategoryStatus, Codebook, CodebookChange, Dimension
from apps.taxonomy.services.categories import merge_category, rename_category
from apps.taxonomy.services.proposals import accept_proposal, propose_category
from tests.core.test_layering import contract

pytestmark = pytest.mark.django_db


def _snapshot() -> tuple[int, ...]:
    return (
        Item.objects.count(),
        ImportJob.objects.count(),
        CodebookChange.objects.count(),
        Annotation.objects.count(),
        LabelValue.objects.count(),
        Decision.objects.count(),
        Review.objects.count(),
    )


def test_load_demo_builds_the_tosem23_study_from_real_labels() -> None:
    call_command("load_demo")
    study = Study.objects.get(slug="tosem23")
    status = study_status(study)
    assert status["items"] == 216 + 3  # rounds 1-2 posts + three marked examples
    assert status["rounds"] == 3
    assert status["assignments"] == {"open": 6, "submitted": 432}
    assert status["codebook_version"] == 1
    decided = status["decisions"]["unanimous"]
    assert decided + status["disagreements_open"] == 216
    assert status["disagreements_open"] > 0  # round 1's real disagreements wait for the lead
    roles = dict(Membership.objects.filter(study=study).values_list("user__username", "role"))
    assert roles == {"lead": "lead", "annotator1": "annotator", "annotator2": "annotator"}
    real = Item.objects.filter(study=study).exclude(url__startswith="https://example.org/")
    assert not real.exclude(body="").exists(), "no text is ever invented for a real URL"
    # URL-only, and left so: hydrate runs only when a lead asks (the demo makes no request to any source)
    assert Item.objects.filter(study=study).url_only().count() == 216
    assert not ImportJob.objects.filter(kind=ImportKind.HYDRATE).exists()
    examples = Item.objects.filter(study=study, url__startswith="https://example.org/")
    assert all(i.title.startswith("Example —") for i in examples)
    assert (
        Review.objects.filter(study=study, state=ReviewState.DISAGREEMENT).count()
        == status["disagreements_open"]
    )


def test_load_demo_twice_changes_nothing() -> None:
    call_command("load_demo")
    before = _snapshot()
    call_command("load_demo")
    assert _snapshot() == before


def _team_works_on_the_demo(study: Study) -> dict[str, int]:
    """What a team does in the demo, through the services the pages call: a rename, a merge, an accepted
    proposal, a submitted practice label and a lead's decision. Returns the ids of what changed."""
    lead = User.objects.get(username="lead")
    annotator = User.objects.get(username="annotator1")
    topics = Dimension.objects.get(codebook__study=study, key="howto_topic")
    renamed = rename_category(topics.categories.get(key="communication"), "Talking to peers", actor=lead)
    merged = topics.categories.get(key="evaluation")
    merge_category(merged, topics.categories.get(key="model"), actor=lead)
    proposal = propose_category(topics, "Checkpointing", None, "asked twice in round 2", annotator)
    accept_proposal(proposal.category, actor=lead)

    practice = Assignment.objects.filter(
        round__study=study, round__number=3, annotator=annotator, status=AssignmentStatus.OPEN
    ).first()
    assert practice is not None
    labels = {"findings": [{"values": {"issue_type": ["howto"], "howto_topic": ["model"]}}]}
    version = Codebook.objects.get(study=study).version
    submit_annotation(practice, labels, annotator, codebook_version=version)

    review = Review.objects.filter(study=study, state=ReviewState.DISAGREEMENT).order_by("item_id").first()
    assert review is not None
    theirs = LabelValue.objects.filter(
        finding__annotation__assignment__item_id=review.item_id,
        finding__annotation__assignment__annotator=annotator,
        finding__number=1,
        pending=False,
    ).values_list("dimension__key", "category__key")
    gold: dict[str, list[str]] = {}
    for dimension, key in theirs:
        gold.setdefault(dimension, []).append(key)
    decision = decide(
        review.item, [gold], actor=lead, rationale="annotator1 read it right", expected_decision_id=None
    )
    return {"renamed": renamed.pk, "merged": merged.pk, "proposed": proposal.category.pk,
            "practice": practice.pk, "decision": decision.pk}  # fmt: skip


def test_load_demo_again_keeps_everything_the_team_did_in_the_demo() -> None:
    call_command("load_demo")
    study = Study.objects.get(slug="tosem23")
    changed = _team_works_on_the_demo(study)
    before = _snapshot()
    version = Codebook.objects.get(study=study).version

    call_command("load_demo")

    assert _snapshot() == before
    assert Codebook.objects.get(study=study).version == version > 1
    assert Category.objects.get(pk=changed["renamed"]).name == "Talking to peers"
    assert Category.objects.get(pk=changed["merged"]).status == CategoryStatus.MERGED
    assert Category.objects.get(pk=changed["proposed"]).status == CategoryStatus.ACTIVE
    assert Assignment.objects.get(pk=changed["practice"]).status == AssignmentStatus.SUBMITTED
    decision = Decision.objects.get(pk=changed["decision"])
    assert decision.is_current and decision.provenance == Provenance.ADJUDICATED


def test_reset_demo_restores_the_demo_as_first_loaded() -> None:
    call_command("load_demo")
    study = Study.objects.get(slug="tosem23")
    first = (_snapshot(), study_status(study))
    _team_works_on_the_demo(study)
    User.objects.filter(username="lead").update(password="changed")

    call_command("reset_demo")

    study = Study.objects.get(slug="tosem23")
    assert (_snapshot(), study_status(study)) == first
    topics = Dimension.objects.get(codebook__study=study, key="howto_topic")
    assert topics.categories.get(key="communication").name == "Communication"
    assert topics.categories.get(key="evaluation").status == CategoryStatus.ACTIVE
    assert not topics.categories.filter(name="Checkpointing").exists()
    assert not Decision.objects.filter(study=study, provenance=Provenance.ADJUDICATED).exists()
    assert User.objects.get(username="lead").check_password("taxonomist-demo")


def test_reset_demo_leaves_other_studies_alone() -> None:
    call_command("load_demo")
    other = Study.objects.create(slug="mine", name="Mine")
    Membership.objects.create(study=other, user=User.objects.get(username="lead"), role=Role.OWNER)

    call_command("reset_demo")

    assert Study.objects.filter(slug="mine").exists()
    assert Membership.objects.filter(study=other, user__username="lead", role=Role.OWNER).exists()


def _export_csv(study: Study) -> Path:
    job = export_in_foreground(study, parse_options(study, format="csv"))
    path = stored_path(job)
    assert path is not None and path.is_file(), job.error
    return path


def test_reset_demo_removes_the_demo_s_exports_their_scratch_folders_and_its_uploads(
    file_roots: dict[str, Path],
    django_capture_on_commit_callbacks: Callable[..., AbstractContextManager[Any]],
) -> None:
    call_command("load_demo")
    demo = Study.objects.get(slug="tosem23")
    exported = _export_csv(demo)
    killed = create_export(demo, parse_options(demo, format="csv"))  # a worker killed half-way left this
    scratch = scratch_dir(killed)
    scratch.mkdir(parents=True)
    (scratch / "tosem23-export.csv.part").write_text("half a file", encoding="utf-8")
    upload = save_upload(demo, "more.csv", [b"url,title\n"])
    ImportJob.objects.create(study=demo, kind=ImportKind.FILE, upload=str(upload))
    orphan = save_upload(demo, "refused.csv", [b"url\n"])  # stored, then its import was never recorded
    other = Study.objects.create(slug="mine", name="Mine")
    other_export = _export_csv(other)
    other_upload = save_upload(other, "mine.csv", [b"url\n"])

    with django_capture_on_commit_callbacks(execute=True):
        call_command("reset_demo")

    assert exported == file_roots["exports"] / "tosem23" / exported.name
    for gone in (exported, scratch, upload, orphan):
        assert not gone.exists(), f"{gone} was left behind"
    assert not (file_roots["exports"] / "tosem23").exists()
    assert not (file_roots["uploads"] / "tosem23").exists()
    assert other_export.is_file() and other_upload.is_file()


def test_a_study_named_tosem23_that_is_not_the_demo_is_never_written_or_deleted() -> None:
    Study.objects.create(slug="tosem23", name="Our own study")

    with pytest.raises(CommandError, match="'tosem23' exists and is not the demo"):
        call_command("load_demo")
    with pytest.raises(CommandError, match="'tosem23' is not the demo"):
        call_command("reset_demo")

    assert Study.objects.get(slug="tosem23").name == "Our own study"
    assert _snapshot() == (0, 0, 0, 0, 0, 0, 0)


@pytest.mark.parametrize("command", ["load_demo", "reset_demo"])
def test_the_demo_commands_belong_to_the_top_app_of_the_layers(command: str) -> None:
    """Resetting the demo deletes rows and files of every app, export jobs included: only the top app may."""
    top = contract("layers")["layers"][0]
    assert get_commands()[command] == f"apps.{top}"
