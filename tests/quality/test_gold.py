"""Gold checks and training rounds (docs/quality.md, issue #24 points 1, 2 and 4): marking, seeding, the
submission that never touches the decision, agreement and exports without them, the report's gold figures,
training feedback, scores and the pass mark's lock, and the annotator's own view."""

from __future__ import annotations

import io
import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from apps.accounts.models import Role, Study, User
from apps.adjudication.models import Decision, Review
from apps.agreement.ratings import load_study_ratings
from apps.annotation.models import Assignment, AssignmentStatus, GoldItem, Round, RoundItem, RoundKind
from apps.annotation.services import next_open_assignment, submit_annotation
from apps.annotation.services.gold import (
    GoldError,
    create_training_round,
    mark_gold,
    seed_gold,
    training_lock,
    training_scores,
)
from apps.corpus.models import Item
from tests.conftest import login
from tests.factories import ItemFactory, MembershipFactory, UserFactory
from tests.html import steady

pytestmark = pytest.mark.django_db

BUG = {"findings": [{"values": {"kind": ["bug"], "symptom": ["segfault"], "fix": ["code"]}}], "memo": ""}
QUESTION = {
    "findings": [{"values": {"kind": ["question"], "symptom": ["slow"], "fix": ["docs"]}}],
    "memo": "",
}


@pytest.fixture
def carol(study: Study) -> User:
    return MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username="carol")).user


@pytest.fixture
def dave(study: Study) -> User:
    return MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username="dave")).user


@pytest.fixture
def decided(codebook: Any, annotate: Any, carol: User, dave: User) -> list[Item]:
    """Round 1: carol and dave agree on four items (each decided unanimously: bug, bug, question, bug) and
    disagree on a fifth (open). Alice and bob never saw any of them."""
    study = codebook.study
    items = [ItemFactory(study=study, title="Same title", body="Same body") for _ in range(5)]
    pairs = [("bug", "bug"), ("bug", "bug"), ("question", "question"), ("bug", "bug"), ("bug", "question")]
    for item, (c, d) in zip(items, pairs, strict=True):
        values = {"symptom": ["segfault"], "fix": ["code"]}
        annotate(1, item, carol, [{"kind": [c], **values}])
        annotate(1, item, dave, [{"kind": [d], **values}])
    return items


@pytest.fixture
def round_two(
    codebook: Any, annotate: Any, annotator_a: User, annotator_b: User, decided: list[Item]
) -> tuple[Round, list[Item]]:
    """Round 2: three fresh items, open for alice and bob."""
    study = codebook.study
    fresh = [ItemFactory(study=study, title="Same title", body="Same body") for _ in range(3)]
    for item in fresh:
        annotate(2, item, annotator_a, [], submitted=False)
        annotate(2, item, annotator_b, [], submitted=False)
    return Round.objects.get(study=study, number=2), fresh


def _version(study: Study) -> int:
    return int(study.codebook.version)


# --- Marking -----------------------------------------------------------------------------------------


def test_only_decided_items_can_be_marked_and_a_refusal_writes_nothing(
    study: Study, decided: list[Item]
) -> None:
    with pytest.raises(GoldError, match=f"not decided: {decided[4].pk}"):
        mark_gold(study, [decided[0].pk, decided[4].pk])
    assert not GoldItem.objects.exists()
    assert mark_gold(study, [decided[0].pk, decided[1].pk]).marked == 2
    again = mark_gold(study, [decided[0].pk, decided[2].pk])
    assert (again.marked, again.already) == (1, 1)


def test_mark_gold_command_takes_ids_or_a_file_and_names_a_bad_item(
    study: Study, decided: list[Item], tmp_path: Any
) -> None:
    out = io.StringIO()
    call_command("mark_gold", study.slug, "--items", f"{decided[0].pk},{decided[1].url}", stdout=out)
    assert "marked 2 gold item(s)" in out.getvalue()
    listing = tmp_path / "gold.txt"
    listing.write_text(f"# gold\n{decided[2].pk}\n\n{decided[3].url}\n", encoding="utf-8")
    call_command("mark_gold", study.slug, "--file", str(listing), stdout=out)
    assert GoldItem.objects.count() == 4
    with pytest.raises(CommandError, match=r"no item of study .* is 999999"):
        call_command("mark_gold", study.slug, "--items", "999999")
    call_command("mark_gold", study.slug, "--items", str(decided[3].pk), "--unmark", stdout=out)
    assert GoldItem.objects.count() == 3


# --- Seeding ------------------------------------------------------------------------------------------


def test_seeding_gives_each_annotator_n_gold_checks_among_their_items_and_only_tops_up(
    study: Study, decided: list[Item], round_two: tuple[Round, list[Item]]
) -> None:
    round_, fresh = round_two
    mark_gold(study, [i.pk for i in decided[:4]])
    result = seed_gold(study, 2, 2, seed=7)
    assert result.seeded == {"alice": 2, "bob": 2}
    gold = Assignment.objects.filter(round=round_, gold=True)
    assert gold.count() == 4
    assert not RoundItem.objects.filter(round=round_, item_id__in=[a.item_id for a in gold]).exists()
    assert all(0 <= a.position <= len(fresh) for a in gold)
    assert seed_gold(study, 2, 2, seed=7).seeded == {"alice": 0, "bob": 0}
    with pytest.raises(GoldError, match="alice needs 3 more gold check"):
        seed_gold(study, 2, 5, seed=7)
    assert Assignment.objects.filter(round=round_, gold=True).count() == 4


def test_a_gold_item_is_never_given_to_someone_who_labelled_it(
    study: Study, decided: list[Item], round_two: tuple[Round, list[Item]], carol: User
) -> None:
    mark_gold(study, [i.pk for i in decided[:4]])
    with pytest.raises(GoldError, match=r"carol needs 1 more .* only 0 gold item"):
        seed_gold(study, 2, 1, seed=1, annotators=["carol"])


# --- Submitting a gold check ----------------------------------------------------------------------------


@pytest.fixture
def seeded(study: Study, decided: list[Item], round_two: tuple[Round, list[Item]]) -> Round:
    mark_gold(study, [i.pk for i in decided[:4]])
    seed_gold(study, 2, 2, seed=3)
    return round_two[0]


def test_a_gold_check_waits_in_the_queue_although_its_item_is_decided(
    study: Study, seeded: Round, annotator_a: User
) -> None:
    seen = set()
    after = None
    while (following := next_open_assignment(annotator_a, study, after=after)) is not None:
        seen.add(following.pk)
        Assignment.objects.filter(pk=following.pk).update(status=AssignmentStatus.SUBMITTED)
        after = following
    mine = set(Assignment.objects.filter(annotator=annotator_a, round=seeded).values_list("pk", flat=True))
    assert seen == mine and len(mine) == 5


def test_submitting_a_gold_check_records_the_answer_and_never_touches_the_decision(
    study: Study, seeded: Round, annotator_a: User
) -> None:
    decisions = list(Decision.objects.order_by("pk").values_list("pk", "item_id", "is_current", "provenance"))
    reviews = list(Review.objects.order_by("pk").values_list("pk", "state", "round_id", "updated_at"))
    for assignment in Assignment.objects.filter(annotator=annotator_a, gold=True):
        result = submit_annotation(assignment, QUESTION, annotator_a, codebook_version=_version(study))
        assert result.changed and not result.training
        assert result.annotation.findings.count() == 1
        # an edit, as an ordinary item allows while a co-annotator has not submitted
        submit_annotation(assignment, BUG, annotator_a, codebook_version=_version(study))
    assert (
        list(Decision.objects.order_by("pk").values_list("pk", "item_id", "is_current", "provenance"))
        == decisions
    )
    assert list(Review.objects.order_by("pk").values_list("pk", "state", "round_id", "updated_at")) == reviews


def test_gold_checks_never_count_in_agreement(
    study: Study, seeded: Round, annotator_a: User, annotator_b: User
) -> None:
    def agreement() -> dict[str, Any]:
        out = io.StringIO()
        call_command("agreement", study.slug, "--dimension", "kind", "--format", "json", stdout=out)
        return dict(json.loads(out.getvalue()))

    before, figures = load_study_ratings(study).rows.size, agreement()
    for user in (annotator_a, annotator_b):
        for assignment in Assignment.objects.filter(annotator=user, gold=True):
            submit_annotation(assignment, QUESTION, user, codebook_version=_version(study))
    assert load_study_ratings(study).rows.size == before
    assert agreement() == figures
    assert (figures["n_items"], figures["n_annotators"]) == (5, 2)  # carol and dave's round 1 only


def test_the_report_scores_gold_checks_per_annotator_and_dimension_with_the_misses(
    client: Client, study: Study, seeded: Round, annotator_a: User, annotator_b: User, lead: User
) -> None:
    for assignment in Assignment.objects.filter(annotator=annotator_a, gold=True).order_by("pk"):
        submit_annotation(assignment, QUESTION, annotator_a, codebook_version=_version(study))
    for assignment in Assignment.objects.filter(annotator=annotator_b, gold=True):
        item = assignment.item
        answer = (
            QUESTION
            if Decision.objects.get(item=item, is_current=True)
            .findings.get()
            .values.filter(category__key="question")
            .exists()
            else BUG
        )
        submit_annotation(assignment, answer, annotator_b, codebook_version=_version(study))
    out = io.StringIO()
    call_command("annotator_report", study.slug, "--dimension", "kind", "--format", "json", stdout=out)
    rows = {(r["annotator"], r["round"]): r for r in json.loads(out.getvalue())["annotators"]}
    bob = rows["bob", 2]
    assert (bob["n_gold"], bob["gold_accuracy"]) == (2, 1.0)
    assert bob["gold_accuracy_ci"][1] == pytest.approx(1.0) and bob["gold_accuracy_ci"][0] < 1
    alice = rows["alice", 2]
    gold_items = Assignment.objects.filter(annotator=annotator_a, gold=True).values_list("item_id", flat=True)
    bugs = sum(
        1
        for i in gold_items
        if Decision.objects.get(item_id=i, is_current=True)
        .findings.get()
        .values.filter(category__key="bug")
        .exists()
    )
    assert (alice["n_gold"], alice["gold_accuracy"]) == (2, (2 - bugs) / 2)
    assert "gold_accuracy" not in alice["undefined"]
    login(client, lead)
    page = client.get(reverse("quality:quality", args=[study.slug]), {"dimension": "kind"}).content.decode()
    misses = page.split('id="gold-misses"')[1].split("</table>")[0]
    assert misses.count("<tr>") - 1 == bugs  # the header row aside
    assert "bob" not in misses


def test_raw_exports_leave_gold_checks_out(
    study: Study, seeded: Round, annotator_a: User, tmp_path: Any
) -> None:
    for assignment in Assignment.objects.filter(annotator=annotator_a, gold=True):
        submit_annotation(assignment, QUESTION, annotator_a, codebook_version=_version(study))
    target = tmp_path / "raw.json"
    call_command(
        "export_dataset",
        study.slug,
        "--format",
        "json",
        "--output",
        str(target),
        "--raw",
        stdout=io.StringIO(),
    )
    text = target.read_text(encoding="utf-8")
    assert '"alice"' not in text  # alice's only submitted labels are gold checks


# --- Indistinguishable ----------------------------------------------------------------------------------


class _Shape(HTMLParser):
    """The page's tags and attributes, numbers and item URLs blanked: its shape, not its data."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(f"{tag} {sorted((k, re.sub(r'\d+', '0', v or '')) for k, v in attrs)}")


def _shape(html: str, urls: list[str]) -> list[str]:
    html = steady(html)
    for url in urls:
        html = html.replace(url, "URL")
    parser = _Shape()
    parser.feed(re.sub(r"\d+", "0", html))
    return parser.tags


def test_a_gold_check_and_an_ordinary_item_look_alike_in_the_queue_and_the_workbench(
    client: Client, study: Study, seeded: Round, annotator_a: User
) -> None:
    login(client, annotator_a)
    mine = Assignment.objects.filter(annotator=annotator_a, round=seeded).select_related("item")
    gold = next(a for a in mine if a.gold)
    plain = next(a for a in mine if not a.gold)
    urls = [a.item.url for a in mine]
    pages = {}
    for a in (gold, plain):
        for headers in ({}, {"HX-Request": "true"}):
            response = client.get(reverse("annotation:workbench", args=[study.slug, a.pk]), headers=headers)
            assert response.status_code == 200
            pages[a.gold, bool(headers)] = _shape(response.content.decode(), urls)
    assert pages[True, False] == pages[False, False]
    assert pages[True, True] == pages[False, True]
    for a, payload in ((gold, BUG), (plain, BUG)):  # after a submission too
        submit_annotation(a, payload, annotator_a, codebook_version=_version(study))
    after = {
        a.gold: _shape(
            client.get(reverse("annotation:workbench", args=[study.slug, a.pk])).content.decode(), urls
        )
        for a in (gold, plain)
    }
    assert after[True] == after[False]
    queue = client.get(reverse("annotation:queue", args=[study.slug])).content.decode()
    assert "gold" not in queue.lower()


# --- Training rounds ------------------------------------------------------------------------------------


@pytest.fixture
def training(study: Study, decided: list[Item], round_two: tuple[Round, list[Item]]) -> Round:
    mark_gold(study, [i.pk for i in decided[:4]])
    return create_training_round(study, ["alice", "bob"], 2, seed=5, pass_mark=100).round


def test_a_training_round_gives_gold_items_only_and_comes_first_in_the_queue(
    study: Study, training: Round, annotator_a: User
) -> None:
    assert training.kind == RoundKind.TRAINING and training.number == 3
    mine = Assignment.objects.filter(round=training, annotator=annotator_a)
    assert mine.count() == 2 and all(a.gold for a in mine)
    first = next_open_assignment(annotator_a, study)
    assert first is not None and first.round_id == training.pk


def test_a_training_submission_shows_the_gold_answer_the_rationale_and_the_confused_definitions(
    client: Client, study: Study, training: Round, annotator_a: User
) -> None:
    from apps.taxonomy.models import Category

    Category.objects.filter(key="question").update(definition="Asks how to do something.")
    Category.objects.filter(key="bug").update(definition="Reports a fault.")
    Decision.objects.filter(item__in=[a.item for a in Assignment.objects.filter(round=training)]).update(
        rationale="A RATIONALE OF THE LEAD"
    )
    login(client, annotator_a)
    assignment = Assignment.objects.filter(round=training, annotator=annotator_a).order_by("position", "pk")[
        0
    ]
    gold_kind = (
        Decision.objects.get(item=assignment.item, is_current=True)
        .findings.get()
        .values.get(dimension__key="kind")
        .category.key
    )
    wrong = "question" if gold_kind == "bug" else "bug"
    url = reverse("annotation:workbench", args=[study.slug, assignment.pk])
    assert "wb-feedback" not in client.get(url).content.decode()
    form = _form(wrong)
    response = client.post(reverse("annotation:submit", args=[study.slug, assignment.pk]), form)
    assert response.status_code == 302 and response["Location"] == url  # the feedback, not the next item
    page = client.get(url).content.decode()
    assert "wb-feedback" in page and "Not quite" in page
    assert "A RATIONALE OF THE LEAD" in page
    assert "Asks how to do something." in page and "Reports a fault." in page
    score = training_scores(study, user=annotator_a)[training.pk, annotator_a.pk]
    assert (score.correct, score.total) == (2, 3)  # the kind wrong; the symptom and the fix as decided
    # answered once: a training item is final after its submission
    again = client.post(reverse("annotation:submit", args=[study.slug, assignment.pk]), _form(gold_kind))
    assert again.status_code == 409


def _form(kind: str, version: int = 3) -> dict[str, Any]:
    return {
        "codebook_version": str(version),
        "finding": ["1"],
        "v-1-kind": [kind],
        "v-1-symptom": ["segfault"],
        "v-1-fix": ["code"],
        "next": "next",
    }


def _answer(assignment: Assignment, *, right: bool) -> dict[str, Any]:
    kind = (
        Decision.objects.get(item=assignment.item, is_current=True)
        .findings.get()
        .values.get(dimension__key="kind")
        .category.key
    )
    if not right:
        kind = "question" if kind == "bug" else "bug"
    return {"findings": [{"values": {"kind": [kind], "symptom": ["segfault"], "fix": ["code"]}}], "memo": ""}


def test_below_the_pass_mark_the_real_rounds_are_locked_in_the_browser_and_the_api(
    client: Client, study: Study, training: Round, annotator_a: User
) -> None:
    real = Assignment.objects.filter(round__number=2, annotator=annotator_a, gold=False).first()
    assert real is not None
    page = reverse("annotation:workbench", args=[study.slug, real.pk])
    api = APIClient()
    api.force_login(annotator_a)
    api_url = f"/api/v1/studies/{study.slug}/assignments/{real.pk}/annotation/"
    login(client, annotator_a)
    queue = reverse("annotation:queue", args=[study.slug])
    response = client.get(page, follow=True)  # to the queue, where the training round waits, with the reason
    assert response.redirect_chain == [(queue, 302)]
    assert "Finish Training 3 first" in response.content.decode() and "Locked:" in response.content.decode()
    assert client.post(f"{page}submit/", {"codebook_version": "1"}).status_code == 403
    refused = api.post(api_url, BUG, format="json")
    assert refused.status_code == 403 and "pass mark" in refused.content.decode()
    first, second = Assignment.objects.filter(round=training, annotator=annotator_a).order_by("pk")
    submit_annotation(first, _answer(first, right=True), annotator_a, codebook_version=_version(study))
    submit_annotation(second, _answer(second, right=False), annotator_a, codebook_version=_version(study))
    reason = training_lock(annotator_a, study)
    assert reason is not None and "83 %, below its pass mark of 100 %" in reason  # 5 of 6 judgements
    assert client.get(page).status_code == 302
    Round.objects.filter(pk=training.pk).update(pass_mark=80)
    assert training_lock(annotator_a, study) is None
    assert client.get(page).status_code == 200
    assert api.post(api_url, BUG, format="json").status_code == 201


def test_a_training_round_without_a_pass_mark_locks_nothing(
    client: Client, study: Study, decided: list[Item], round_two: tuple[Round, list[Item]], annotator_a: User
) -> None:
    mark_gold(study, [i.pk for i in decided[:4]])
    create_training_round(study, ["alice"], 1, seed=1)
    real = Assignment.objects.filter(round__number=2, annotator=annotator_a).first()
    assert real is not None
    login(client, annotator_a)
    assert client.get(reverse("annotation:workbench", args=[study.slug, real.pk])).status_code == 200


def test_training_round_command_and_its_refusals(
    study: Study, decided: list[Item], annotator_a: User
) -> None:
    mark_gold(study, [i.pk for i in decided[:4]])
    out = io.StringIO()
    call_command("training_round", study.slug, "--annotators", "alice", "--size", "3", "--seed", "2",
                 "--pass-mark", "80", stdout=out)  # fmt: skip
    assert "pass mark 80 %" in out.getvalue()
    with pytest.raises(CommandError, match="pass mark is a percentage"):
        call_command("training_round", study.slug, "--annotators", "alice", "--size", "1", "--seed", "2",
                     "--pass-mark", "120")  # fmt: skip
    with pytest.raises(CommandError, match="only 4 gold item"):
        call_command("training_round", study.slug, "--annotators", "alice", "--size", "9", "--seed", "2")
    assert Round.objects.filter(kind=RoundKind.TRAINING).count() == 1


# --- My work --------------------------------------------------------------------------------------------


def test_my_work_shows_my_training_score_and_never_another_annotators_figures(
    client: Client, study: Study, training: Round, annotator_a: User, annotator_b: User
) -> None:
    for user, right in ((annotator_a, True), (annotator_b, False)):
        for assignment in Assignment.objects.filter(round=training, annotator=user):
            submit_annotation(
                assignment, _answer(assignment, right=right), user, codebook_version=_version(study)
            )
    login(client, annotator_a)
    page = client.get(reverse("quality:my-work", args=[study.slug])).content.decode()
    assert "100 %" in page and "passed" in page
    assert "bob" not in page.replace(annotator_a.username, "")
    assert "67 %" not in page  # bob's score: 4 of 6 judgements
    login(client, annotator_b)
    page = client.get(reverse("quality:my-work", args=[study.slug])).content.decode()
    assert "67 %" in page and "below the pass mark" in page
    assert "alice" not in page


def test_my_work_shows_my_agreement_with_the_decisions_only_once_the_round_is_revealed(
    client: Client, study: Study, decided: list[Item], carol: User
) -> None:
    from apps.annotation.services import reveal_round

    login(client, carol)
    url = reverse("quality:my-work", args=[study.slug])
    assert "Shown once a round of yours is revealed" in client.get(url).content.decode()
    reveal_round(study, 1, force=True)
    page = client.get(url).content.decode()
    table = page.split('id="my-agreement"')[1].split("</table>")[0]
    assert "1.00" in table and "dave" not in page


# --- The replication package --------------------------------------------------------------------------


def test_a_restored_package_keeps_the_training_round_its_pass_mark_and_the_gold_items(
    study: Study, training: Round, lead: User, tmp_path: Any
) -> None:
    from apps.export.package import build_package, import_study

    GoldItem.objects.filter(study=study).update(marked_by=lead)
    build_package(study, tmp_path / "p.zip")

    copy = import_study("ddp-copy", tmp_path / "p.zip").study

    rounds = {r.number: (r.kind, r.pass_mark) for r in Round.objects.filter(study=copy)}
    assert rounds[training.number] == (RoundKind.TRAINING, 100)
    assert all(kind == RoundKind.RELIABILITY for n, (kind, _) in rounds.items() if n != training.number)
    fields = ("item__url", "marked_by__username")
    expected = set(GoldItem.objects.filter(study=study).values_list(*fields))
    assert set(GoldItem.objects.filter(study=copy).values_list(*fields)) == expected
    assert len(expected) == 4
    # gold checks' answers are not labels: none of the copy's assignments is a gold check
    assert not Assignment.objects.filter(study=copy, gold=True).exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s["gold_items"][0].update(url="https://example.org/x"), "is not an item of items.jsonl"),
        (lambda s: s["rounds"][-1].update(kind="quiz"), "expected one of reliability"),
        (lambda s: s["rounds"][-1].update(pass_mark=120), "a whole percentage from 1 to 100"),
        (lambda s: s["rounds"][0].update(pass_mark=50), "only a training round has a pass mark"),
    ],
)
def test_a_package_with_a_bad_gold_item_or_round_kind_is_refused_naming_it_and_nothing_is_written(
    study: Study, training: Round, tmp_path: Any, change: Any, message: str
) -> None:
    from apps.export.package import PackageError, build_package, import_study
    from tests.export.test_package import members, repack

    original = tmp_path / "p.zip"
    build_package(study, original)
    sampling = json.loads(members(original)["sampling.json"])
    change(sampling)
    broken = repack(original, tmp_path / "broken.zip", {"sampling.json": json.dumps(sampling).encode()})
    before = (Study.objects.count(), Round.objects.count(), GoldItem.objects.count())

    with pytest.raises(PackageError, match=message) as error:
        import_study("ddp-copy", broken)

    assert "sampling.json." in str(error.value)
    assert (Study.objects.count(), Round.objects.count(), GoldItem.objects.count()) == before


def test_a_gold_item_without_a_decision_in_the_package_is_refused(
    study: Study, training: Round, tmp_path: Any
) -> None:
    from apps.export.package import PackageError, build_package, import_study
    from tests.export.test_package import members, repack

    original = tmp_path / "p.zip"
    build_package(study, original)
    files = members(original)
    sampling = json.loads(files["sampling.json"])
    undecided = next(
        line["url"]
        for line in map(json.loads, files["items.jsonl"].decode().splitlines())
        if line["url"] not in {g["url"] for g in sampling["gold_items"]}
        and not Decision.objects.filter(item__url=line["url"], study=study).exists()
    )
    sampling["gold_items"].append({"url": undecided, "marked_by": None, "marked_at": "2026-01-01T00:00:00Z"})
    broken = repack(original, tmp_path / "broken.zip", {"sampling.json": json.dumps(sampling).encode()})

    with pytest.raises(PackageError, match=r"no decision in dataset\.json: a gold check is a decided item"):
        import_study("ddp-copy", broken)


def test_the_methods_section_counts_no_training_round_among_the_labelling_rounds(
    study: Study, training: Round
) -> None:
    from apps.export.paper.facts import methods_data
    from apps.taxonomy.index import CodebookIndex

    facts = methods_data(study, CodebookIndex.for_study(study), {"rounds": [], "all_rounds": {}}, [])
    numbers = [r.number for r in facts.rounds]

    assert training.number not in numbers and numbers == [1, 2]


def test_a_lead_changes_a_training_rounds_pass_mark_on_its_page_and_the_lock_follows(
    client: Client, study: Study, training: Round, lead: User, annotator_a: User
) -> None:
    first, second = Assignment.objects.filter(round=training, annotator=annotator_a).order_by("pk")
    submit_annotation(first, _answer(first, right=True), annotator_a, codebook_version=_version(study))
    submit_annotation(second, _answer(second, right=False), annotator_a, codebook_version=_version(study))
    assert training_lock(annotator_a, study) is not None  # 83 % below 100 %
    page = reverse("annotation:round-detail", args=[study.slug, training.number])
    url = reverse("annotation:round-pass-mark", args=[study.slug, training.number])
    login(client, lead)

    shown = client.get(page).content.decode()
    assert 'name="pass_mark"' in shown and 'value="100"' in shown and "Make it a" not in shown

    lowered = client.post(url, {"pass_mark": "80"}, follow=True).content.decode()
    assert "has pass mark 80 %" in lowered and training_lock(annotator_a, study) is None
    for bad, reason in (
        ("0", "the pass mark is a percentage from 1 to 100 (got 0)"),
        ("most", "'most' is not a whole number"),
    ):
        refused = client.post(url, {"pass_mark": bad}, follow=True).content.decode()
        assert f"Pass mark not changed: {reason}" in refused.replace("&#x27;", "'")
    assert Round.objects.get(pk=training.pk).pass_mark == 80
    cleared = client.post(url, {"pass_mark": ""}, follow=True).content.decode()
    assert "no pass mark: it locks nothing" in cleared
    assert Round.objects.get(pk=training.pk).pass_mark is None
    real = reverse("annotation:round-pass-mark", args=[study.slug, 1])
    assert "is not a training round" in client.post(real, {"pass_mark": "50"}, follow=True).content.decode()
