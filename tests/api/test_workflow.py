"""The whole study lifecycle through the API with tokens, as docs/api.md shows it: import, codebook,
round, labels, agreement, decision, export, download."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from apps.accounts.models import ApiToken, Role, Study, User
from apps.adjudication.models import Decision
from apps.annotation.models import Annotation
from apps.corpus.models import Item
from tests.api.conftest import with_token
from tests.api.world import CODEBOOK

pytestmark = pytest.mark.django_db

ITEMS_CSV = (
    "url,title,body,source\n"
    "https://github.com/horovod/horovod/issues/1,Hang in allreduce,NCCL timeout,github\n"
    "https://github.com/horovod/horovod/issues/2,How to pin GPUs,`hvd.local_rank()`?,github\n"
    "https://github.com/horovod/horovod/issues/3,Segfault on init,core dumped,github\n"
)


def _token(user: User) -> APIClient:
    return with_token(ApiToken.issue(user, "script")[1])


def _all(client: APIClient, url: str) -> list[dict[str, Any]]:
    """Every result of a paginated list, following `next`."""
    results: list[dict[str, Any]] = []
    while url:
        page = client.get(url)
        assert page.status_code == 200, page.content
        results += page.json()["results"]
        url = page.json()["next"]
    return results


def test_a_study_from_import_to_export_through_the_api(
    study: Study,
    owner: User,
    lead: User,
    annotator_a: User,
    annotator_b: User,
    settings: Any,
    tmp_path: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    settings.EXPORT_ROOT = tmp_path / "exports"
    api = _token(lead)
    base = f"/api/v1/studies/{study.slug}"

    # 1. Import a CSV file: 202 with the job; poll it until it is done.
    upload = SimpleUploadedFile("items.csv", ITEMS_CSV.encode(), content_type="text/csv")
    with django_capture_on_commit_callbacks(execute=True):
        started = api.post(f"{base}/imports/", {"kind": "file", "file": upload}, format="multipart")
    assert started.status_code == 202, started.content
    job = api.get(f"{base}/imports/{started.json()['id']}/").json()
    assert job["status"] == "succeeded" and job["created"] == 3, job
    items = _all(api, f"{base}/items/")
    assert [i["title"] for i in items] == ["Hang in allreduce", "How to pin GPUs", "Segfault on init"]

    # 2. Load the codebook (a §5 file as JSON); loading it twice changes nothing.
    loaded = api.put(f"{base}/codebook/", CODEBOOK, format="json")
    assert loaded.status_code == 200 and loaded.json()["changed"] and loaded.json()["version"] == 1
    assert api.put(f"{base}/codebook/", CODEBOOK, format="json").json()["changed"] is False

    # 3. Draw round 1 (seeded) and give every item to both annotators.
    drawn = api.post(f"{base}/rounds/", {"number": 1, "size": 3, "seed": 7}, format="json")
    assert drawn.status_code == 201 and drawn.json()["drawn"] == 3
    assigned = api.post(
        f"{base}/rounds/1/assign/", {"annotators": ["alice", "bob"], "overlap": 2}, format="json"
    )
    assert assigned.json()["loads"] == {"alice": 3, "bob": 3}

    # 4. Each annotator works through their queue with their own token.
    version = api.get(f"{base}/codebook/").json()["version"]
    for user, choice in ((annotator_a, "crash"), (annotator_b, "hang")):
        annotator = _token(user)
        queue = _all(annotator, f"{base}/my/queue/")
        assert len(queue) == 3
        for assignment in queue:
            labels = {"type": ["fault"], "symptom": [choice], "fix": ["config"]}
            if assignment["item"]["title"] == "How to pin GPUs":
                labels = {"type": ["howto"]}
            body = {
                "findings": [{"values": labels}],
                "memo": f"{user.username} read it",
                "codebook_version": version,
            }
            done = annotator.post(f"{base}/assignments/{assignment['id']}/annotation/", body, format="json")
            assert done.status_code == 201, done.content
        assert _all(annotator, f"{base}/my/queue/") == []
        assert {a["annotator"] for a in _all(annotator, f"{base}/my/annotations/")} == {user.username}

    # 5. Agreement: computed now for a small study; the how-to item agrees, the two faults do not.
    computed = api.post(
        f"{base}/agreement/snapshots/", {"scope": "report", "dimension": "type"}, format="json"
    )
    assert computed.status_code == 201, computed.content
    result = computed.json()["result"]
    assert result["n_items"] == 3 and result["percent_agreement"] == 1.0
    symptom = api.post(f"{base}/agreement/snapshots/", {"dimension": "symptom"}, format="json").json()
    assert symptom["result"]["percent_agreement"] == 0.0
    latest = api.post(f"{base}/agreement/snapshots/", {"scope": "dashboard"}, format="json")
    assert latest.status_code == 201
    assert api.get(f"{base}/agreement/").json()["fresh"] is True

    # 6. The disagreements wait for the lead; deciding one with a rationale closes it.
    queue = api.get(f"{base}/disagreements/").json()["results"]
    assert len(queue) == 2 and all(row["annotators"] == ["alice", "bob"] for row in queue)
    item_id = queue[0]["item"]["id"]
    side_by_side = api.get(f"{base}/items/{item_id}/labels/").json()
    assert {a["annotator"] for a in side_by_side["annotations"]} == {"alice", "bob"}
    decision = {
        "item": item_id,
        "findings": [{"values": {"type": ["fault"], "symptom": ["hang"], "fix": ["config"]}}],
        "rationale": "The log shows a stalled allreduce.",
        "expected_decision": None,
    }
    decided = api.post(f"{base}/decisions/", decision, format="json")
    assert decided.status_code == 201, decided.content
    assert decided.json()["provenance"] == "adjudicated"
    provenances = sorted(d["provenance"] for d in _all(api, f"{base}/decisions/"))
    assert provenances == ["adjudicated", "unanimous"]
    status = api.get(f"{base}/status/").json()
    assert status["disagreements_open"] == 1 and status["decisions"]["adjudicated"] == 1

    # 7. Export the consolidated dataset as CSV, poll, download, check the checksum.
    with django_capture_on_commit_callbacks(execute=True):
        export = api.post(f"{base}/exports/", {"format": "csv"}, format="json")
    assert export.status_code == 202
    detail = api.get(f"{base}/exports/{export.json()['id']}/").json()
    assert detail["status"] == "succeeded" and detail["download"], detail
    response = api.get(detail["download"])
    content = b"".join(response.streaming_content)
    import hashlib

    assert hashlib.sha256(content).hexdigest() == detail["sha256"] == response["X-Content-SHA256"]
    rows = list(csv.DictReader(io.StringIO(content.decode())))
    assert {r["provenance"] for r in rows} == {"adjudicated", "unanimous"}
    assert Decision.objects.filter(study=study, is_current=True).count() == 2
    assert Annotation.objects.filter(assignment__study=study).count() == 6
    assert Item.objects.filter(study=study).count() == 3
    assert owner.memberships.get(study=study).role == Role.OWNER
