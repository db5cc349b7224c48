"""Each endpoint's contract: pagination, filters, errors and their shape, conflicts, idempotence."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.utils import timezone

from apps.accounts import permissions
from apps.accounts.models import Membership, Role
from apps.adjudication.models import Review
from apps.adjudication.queries import CLAIM_TTL
from apps.annotation.models import Annotation, Assignment
from apps.annotation.serializers import SubmitResultSerializer, submit_result_data
from apps.core.api import KeysetPagination
from apps.corpus.models import Item
from apps.corpus.serializers import ItemSummarySerializer
from apps.taxonomy.models import Category, CategoryStatus
from tests.api.conftest import as_user, with_token
from tests.api.world import ALICE_LABELS, World, add_jobs
from tests.factories import ItemFactory

pytestmark = pytest.mark.django_db


def test_anonymous_calls_get_401_asking_for_a_token(world: World) -> None:
    response = as_user(None).get(f"/api/v1/studies/{world.study.slug}/items/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json() == {"detail": "Authentication credentials were not provided."}


def test_a_token_authenticates_and_records_its_last_use(world: World) -> None:
    raw = world.token(world.alice)
    response = with_token(raw).get("/api/v1/me/")
    assert response.json()["studies"] == [{"slug": "ddp", "name": world.study.name, "role": "annotator"}]
    assert world.alice.api_tokens.get().last_used_at is not None


def test_a_token_on_a_study_url_reads_the_role_and_study_with_the_token(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One statement reads the token, its user and their membership of the URL's study (decision 0013):
    `access_study` takes them from the user and runs no membership read of its own."""
    membership_reads: list[Any] = []
    original = permissions._MEMBERSHIP.one
    monkeypatch.setattr(
        permissions._MEMBERSHIP, "one", lambda params: membership_reads.append(params) or original(params)
    )
    alice, outsider = with_token(world.token(world.alice)), with_token(world.token(world.outsider))
    base = f"/api/v1/studies/{world.study.slug}"

    assert alice.get(f"{base}/codebook/").status_code == 200
    assert alice.get(f"{base}/my/queue/").status_code == 200
    assert alice.post(f"{base}/rounds/", {"number": 9}, format="json").status_code == 403  # a lead's
    assert outsider.get(f"{base}/codebook/").status_code == 404
    assert with_token(world.token(world.lead)).get(f"{base}/").status_code == 200
    assert membership_reads == []
    assert alice.get("/api/v1/me/").json()["studies"][0]["role"] == "annotator"  # no study URL: as before


def test_items_come_in_keyset_pages_that_cover_every_item_once(world: World) -> None:
    for n in range(5, 12):
        ItemFactory(study=world.study, url=f"https://github.com/example/ddp/issues/{n}")
    client = as_user(world.alice)
    url: str | None = f"/api/v1/studies/{world.study.slug}/items/?page_size=3"
    seen: list[int] = []
    while url:
        page = client.get(url).json()
        assert len(page["results"]) <= 3
        seen += [i["id"] for i in page["results"]]
        url = page["next"]
    assert seen == sorted(seen) and len(seen) == len(set(seen)) == 11


def test_each_listed_item_is_its_summary_as_the_serializer_gives_it(world: World) -> None:
    ItemFactory(study=world.study, url="https://github.com/example/ddp/issues/77", created_at=None, tags=[])
    ItemFactory(
        study=world.study,
        url="https://github.com/example/ddp/issues/78",
        created_at=datetime(2021, 3, 4, 5, 6, 7, 891000, tzinfo=UTC),
        tags=["bug", "nccl"],
    )

    page = as_user(world.alice).get(f"/api/v1/studies/{world.study.slug}/items/?page_size=50").json()

    items = Item.objects.in_study(world.study).order_by("id")
    assert page["results"] == json.loads(json.dumps(ItemSummarySerializer(items, many=True).data))
    assert page["results"][-1]["created_at"] == "2021-03-04T05:06:07.891000Z"


def test_a_forged_cursor_is_a_json_400(world: World) -> None:
    response = as_user(world.alice).get(f"/api/v1/studies/{world.study.slug}/items/?cursor=bm9wZQ")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("The page cursor is not valid")


def test_items_filter_by_search_source_round_and_roundless(world: World) -> None:
    ItemFactory(
        study=world.study,
        url="https://stackoverflow.com/questions/1",
        title="GPU pinning",
        source="stackoverflow",
    )
    client = as_user(world.lead)
    base = f"/api/v1/studies/{world.study.slug}/items/"

    def titles(query: str) -> list[str]:
        return [i["title"] for i in client.get(base + query).json()["results"]]

    assert titles("?q=pinning") == ["GPU pinning"]
    assert titles("?q=issues/2") == ["Training hangs 2"]
    assert titles("?source=stackoverflow") == ["GPU pinning"]
    assert titles("?round=1") == ["Training hangs 1", "Training hangs 2", "Training hangs 3"]
    assert titles("?roundless=true") == ["Training hangs 4", "GPU pinning"]
    bad = client.get(base + "?source=myspace")
    assert bad.status_code == 400
    assert bad.json()["field_errors"]["source"] and "source" in bad.json()["problems"][0]


def test_an_item_body_is_returned_raw_and_sanitized(world: World) -> None:
    item = ItemFactory(
        study=world.study,
        url="https://github.com/example/ddp/issues/99",
        body="<script>alert(1)</script>\n\n**bold**",
    )
    data = as_user(world.alice).get(f"/api/v1/studies/{world.study.slug}/items/{item.pk}/").json()
    assert data["body"] == "<script>alert(1)</script>\n\n**bold**"
    assert "<script" not in data["body_html"] and "<strong>bold</strong>" in data["body_html"]


def test_another_studys_item_is_404(world: World) -> None:
    assert world.other_study is not None
    foreign = ItemFactory(study=world.other_study)
    response = as_user(world.alice).get(f"/api/v1/studies/{world.study.slug}/items/{foreign.pk}/")
    assert response.status_code == 404


def test_submitting_the_same_labels_twice_stores_one_annotation(world: World) -> None:
    client = as_user(world.alice)
    url = f"/api/v1/studies/{world.study.slug}/assignments/{world.assignment('alice', 2).pk}/annotation/"
    first = client.post(url, ALICE_LABELS, format="json")
    again = client.post(url, ALICE_LABELS, format="json")
    assert (first.status_code, first.json()["created"], first.json()["changed"]) == (201, True, True)
    assert (again.status_code, again.json()["created"], again.json()["changed"]) == (200, False, False)
    assert Annotation.objects.filter(assignment=world.assignment("alice", 2)).count() == 1
    assert client.get(url).json()["findings"] == ALICE_LABELS["findings"]


def test_a_submissions_answer_is_the_annotation_as_a_read_gives_it(world: World) -> None:
    """The first submission (PostgreSQL's one-statement path answers from what it wrote) and an edit (the
    ORM path reads it back) both answer what GET then reads, plus whether it was created or changed."""
    client = as_user(world.alice)
    url = f"/api/v1/studies/{world.study.slug}/assignments/{world.assignment('alice', 2).pk}/annotation/"
    edited = {"findings": [{"values": {"type": ["howto"]}}], "memo": "On second thought", "seconds_spent": 42}
    for body, created in ((ALICE_LABELS, True), (edited, False)):
        answer = client.post(url, body, format="json").json()
        assert (answer.pop("created"), answer.pop("changed")) == (created, True)
        assert answer == client.get(url).json()
        assert (answer["round"], answer["annotator"], answer["memo"]) == (1, "alice", body["memo"])


def test_a_submissions_answer_built_directly_equals_what_its_serializer_gives() -> None:
    """`submit_result_data` is `SubmitResultSerializer(body).data` without making the serializer: every
    kind of value (pending, a missing time, an offset other than UTC) gives the same JSON."""
    paris = datetime(2026, 3, 1, 10, 30, 15, 123456, tzinfo=ZoneInfo("Europe/Paris"))
    bodies = [
        {
            "assignment": 7, "item": 3, "round": 1, "annotator": "alice",
            "findings": [{"values": {"type": ["fault"], "symptom": "pending"}}, {"values": {}}],
            "memo": "", "codebook_version": 4, "submitted_at": paris, "updated_at": paris,
            "seconds_spent": None, "created": True, "changed": True,
        },
        {
            "assignment": 8, "item": 9, "round": 2, "annotator": "bob", "findings": [],
            "memo": "A <memo> & \"quotes\"", "codebook_version": 0, "submitted_at": None,
            "updated_at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "seconds_spent": 42,
            "created": False, "changed": False,
        },
    ]  # fmt: skip
    for body in bodies:
        assert json.dumps(submit_result_data(body)) == json.dumps(SubmitResultSerializer(body).data)


def test_labels_breaking_the_codebook_are_refused_with_each_problem(world: World) -> None:
    client = as_user(world.alice)
    url = f"/api/v1/studies/{world.study.slug}/assignments/{world.assignment('alice', 2).pk}/annotation/"
    body = {"findings": [{"values": {"type": ["fault", "howto"], "symptom": ["nope"]}}]}
    response = client.post(url, body, format="json")
    assert response.status_code == 400
    problems = response.json()["problems"]
    assert any("type" in p for p in problems) and any("nope" in p for p in problems)


def test_labels_chosen_on_an_older_codebook_get_409(world: World) -> None:
    lead = as_user(world.lead)
    hang = Category.objects.get(dimension__codebook__study=world.study, key="hang")
    assert (
        lead.post(f"/api/v1/studies/{world.study.slug}/codebook/categories/{hang.pk}/retire/").status_code
        == 200
    )
    client = as_user(world.alice)
    url = f"/api/v1/studies/{world.study.slug}/assignments/{world.assignment('alice', 2).pk}/annotation/"
    response = client.post(url, {**ALICE_LABELS, "codebook_version": 1}, format="json")
    assert response.status_code == 409
    assert "codebook changed" in response.json()["detail"]


def test_two_leads_deciding_one_item_give_one_decision_and_a_409(world: World) -> None:
    url = f"/api/v1/studies/{world.study.slug}/decisions/"
    body = {
        "item": world.items[0].pk,
        "findings": [{"values": {"type": ["howto"]}}],
        "rationale": "",
        "expected_decision": None,
    }
    assert as_user(world.lead).post(url, body, format="json").status_code == 201
    late = as_user(world.owner).post(
        url,
        {**body, "findings": [{"values": {"type": ["fault"], "symptom": ["crash"], "fix": ["code"]}}]},
        format="json",
    )
    assert late.status_code == 409
    assert "lena decided this item" in late.json()["detail"]


def test_a_decided_item_cannot_be_relabelled(world: World) -> None:
    url = f"/api/v1/studies/{world.study.slug}/decisions/"
    body = {
        "item": world.items[0].pk,
        "findings": [{"values": {"type": ["howto"]}}],
        "expected_decision": None,
    }
    assert as_user(world.lead).post(url, body, format="json").status_code == 201
    relabel = as_user(world.alice).post(
        f"/api/v1/studies/{world.study.slug}/assignments/{world.assignment('alice', 0).pk}/annotation/",
        {"findings": [{"values": {"type": ["howto"]}}]},
        format="json",
    )
    assert relabel.status_code == 409


def test_only_an_owner_makes_owners(world: World) -> None:
    url = f"/api/v1/studies/{world.study.slug}/members/"
    refused = as_user(world.lead).post(url, {"username": "bob", "role": "owner"}, format="json")
    assert refused.status_code == 403 and "Only an owner" in refused.json()["detail"]
    granted = as_user(world.owner).post(url, {"username": "bob", "role": "lead"}, format="json")
    assert granted.status_code == 200
    assert Membership.objects.get(study=world.study, user=world.bob).role == Role.LEAD


def test_codebook_edits_go_through_the_editor_services_and_are_versioned(world: World) -> None:
    lead = as_user(world.lead)
    base = f"/api/v1/studies/{world.study.slug}/codebook"
    added = lead.post(
        f"{base}/dimensions/symptom/categories/", {"key": "oom", "name": "Out of memory"}, format="json"
    )
    assert added.status_code == 201 and added.json()["path"] == "Out of memory"
    pk = added.json()["id"]
    edited = lead.patch(f"{base}/categories/{pk}/", {"definition": "The allocator gives up."}, format="json")
    assert edited.json()["definition"] == "The allocator gives up."
    merged = lead.post(f"{base}/categories/{pk}/merge/", {"target": "crash"}, format="json")
    assert merged.json()["status"] == "merged" and merged.json()["merged_into"] == "crash"
    assert lead.get(f"{base}/").json()["version"] == 4
    duplicate = lead.post(
        f"{base}/dimensions/symptom/categories/", {"key": "hang", "name": "Again"}, format="json"
    )
    assert duplicate.status_code == 400 and "hang" in duplicate.json()["detail"]
    unknown = lead.post(f"{base}/categories/{pk}/explode/", {}, format="json")
    assert unknown.status_code == 404


def test_a_proposal_is_usable_by_its_author_at_once(world: World) -> None:
    alice = as_user(world.alice)
    url = f"/api/v1/studies/{world.study.slug}/codebook/proposals/"
    first = alice.post(
        url, {"dimension": "symptom", "name": "Straggler", "reason": "one slow rank"}, format="json"
    )
    again = alice.post(url, {"dimension": "symptom", "name": "Straggler"}, format="json")
    assert first.status_code == 201 and first.json()["category"]["mine"] is True
    assert again.status_code == 200 and again.json()["created"] is False
    assert Category.objects.get(key=first.json()["category"]["key"]).status == CategoryStatus.PROPOSED


def test_bad_requests_name_the_problem(world: World) -> None:
    lead = as_user(world.lead)
    base = f"/api/v1/studies/{world.study.slug}"
    cases: list[tuple[str, dict[str, Any], str]] = [
        (f"{base}/imports/", {"kind": "ftp"}, "Unknown import kind"),
        (f"{base}/imports/", {"kind": "github", "mode": "repo", "repo": "not a repo"}, "owner/name"),
        (f"{base}/rounds/", {"number": 2, "size": 50, "seed": 1}, "Cannot draw 50 items"),
        (f"{base}/rounds/9/assign/", {"annotators": ["alice"]}, "No Round matches"),
        (f"{base}/agreement/snapshots/", {"dimension": "colour"}, "colour"),
        (f"{base}/exports/", {"format": "csv", "level": 9}, "level 9 is out of range"),
        (f"{base}/exports/", {"format": "zip", "round": 1}, "replication package"),
    ]
    for url, body, text in cases:
        response = lead.post(url, body, format="json")
        assert response.status_code in (400, 404), (url, response.status_code)
        assert text in str(response.json()), (url, response.json())


def test_a_download_before_the_export_is_done_is_409(world: World) -> None:
    job = add_jobs(world).extras["export_job"]
    response = as_user(world.lead).get(f"/api/v1/studies/{world.study.slug}/exports/{job.pk}/download/")
    assert response.status_code == 409 and "not ready" in response.json()["detail"]


def test_an_unknown_api_path_is_a_json_404_even_for_a_post() -> None:
    response = Client(enforce_csrf_checks=True).post("/api/v1/no/such/thing/")
    assert response.status_code == 404
    assert response.json() == {"detail": "No API endpoint at /api/v1/no/such/thing/."}


def test_the_disagreement_queue_pages_with_a_cursor(world: World) -> None:
    response = as_user(world.lead).get(f"/api/v1/studies/{world.study.slug}/disagreements/?round=1")
    data = response.json()
    assert [row["item"]["id"] for row in data["results"]] == [world.items[0].pk]
    assert data["next"] is None
    forged = as_user(world.lead).get(f"/api/v1/studies/{world.study.slug}/disagreements/?cursor=xyz")
    assert forged.status_code == 400


def test_a_disagreement_row_carries_its_item_round_dimensions_annotators_update_and_live_claim(
    world: World,
) -> None:
    item = world.items[0]
    url = f"/api/v1/studies/{world.study.slug}/disagreements/?round=1"
    claimed_at = timezone.now() - timedelta(minutes=1)
    Review.objects.filter(item=item).update(claimed_by=world.owner, claimed_at=claimed_at)
    review = Review.objects.get(item=item)
    assert review.disagreeing_dimensions  # the world's two annotators disagree
    expected = {
        "item": {"id": item.pk, "url": item.url, "title": item.title},
        "round": 1,
        "disagreeing_dimensions": review.disagreeing_dimensions,
        "annotators": ["alice", "bob"],
        "updated_at": review.updated_at.isoformat().replace("+00:00", "Z"),
        "claimed_by": world.owner.username,
    }
    world.study.show_annotator_names = True
    world.study.save()
    assert as_user(world.lead).get(url).json()["results"] == [expected]
    world.study.show_annotator_names = False
    world.study.save()
    Review.objects.filter(item=item).update(claimed_at=claimed_at - CLAIM_TTL)  # the claim has lapsed
    anonymous = {**expected, "annotators": ["Annotator 1", "Annotator 2"], "claimed_by": None}
    assert as_user(world.lead).get(url).json()["results"] == [anonymous]


def test_the_schema_and_the_docs_page_describe_every_endpoint(world: World) -> None:
    schema = Client().get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert "/api/v1/studies/{slug}/assignments/{id}/annotation/" in paths
    assert len(paths) >= 30
    docs = Client().get("/api/docs/")
    assert docs.status_code == 200
    text = docs.content.decode()
    assert "/api/v1/studies/{slug}/decisions/" in text and "SubmitRequest" in text
    assert "<script" not in text.replace('<script src="/static/', "")


def test_paging_my_queue_visits_every_open_assignment_once_in_queue_order(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DRF's cursor pages through ties of its first ordering column by an offset capped at `offset_cutoff`
    (1,000): ordered by round number first, an annotator's queue past 1,500 open assignments of one round
    gave the same page forever (found by `make bench-peers` with 1,500 annotations). The cap is lowered
    here so that a dozen assignments, every one at position 0, cross it."""
    monkeypatch.setattr(KeysetPagination, "offset_cutoff", 2)
    extra = [
        ItemFactory(study=world.study, url=f"https://github.com/example/ddp/issues/{n}") for n in range(5, 17)
    ]
    for item in extra:
        world.round.round_items.create(item=item, position=0)
        Assignment.objects.create(
            study=world.study, round=world.round, item=item, annotator=world.bob, position=0
        )
    expected = list(
        Assignment.objects.for_annotator(world.bob).filter(study=world.study).open()
        .order_by("round__number", "position", "id").values_list("pk", flat=True)
    )  # fmt: skip
    client = as_user(world.bob)
    url: str | None = f"/api/v1/studies/{world.study.slug}/my/queue/?page_size=2"
    seen: list[int] = []
    while url and len(seen) <= 2 * len(expected):
        page = client.get(url).json()
        seen += [row["id"] for row in page["results"]]
        url = page["next"]
    assert seen == expected
