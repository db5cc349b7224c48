"""The codebook screens: permissions, status codes, htmx partials versus pages, HX-Trigger events, the
workbench's propose endpoint, and a constant number of queries on the codebook page."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from apps.accounts.models import Study, User
from apps.annotation.models import LabelValue
from apps.core.generations import figures_changed
from apps.taxonomy import services
from apps.taxonomy.models import Category, CategoryStatus, ChangeKind, Codebook, CodebookChange
from tests.conftest import login
from tests.taxonomy.conftest import CODEBOOK, category, dimension, put_gold, put_label

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


def url(name: str, study: Study, *args: Any) -> str:
    return reverse(f"taxonomy:{name}", args=[study.slug, *args])


def _triggers(response: Any) -> dict[str, Any]:
    header = response.headers.get("HX-Trigger")
    return json.loads(header) if header else {}


# --- Permissions -------------------------------------------------------------------------------------


def test_outsider_gets_404_everywhere(
    client: Client, study: Study, outsider: User, codebook: Codebook
) -> None:
    login(client, outsider)
    hang = category(study, "hang")
    for target in [
        url("codebook", study),
        url("trees", study),
        url("history", study),
        url("version", study, 1),
        url("export", study, "json"),
        url("category", study, hang.pk),
        url("proposals", study),
    ]:
        assert client.get(target).status_code == 404, target
    assert client.post(url("propose", study), {"dimension": "symptom", "name": "X"}).status_code == 404
    assert client.post(url("category-merge", study, hang.pk), {"target": hang.pk}).status_code == 404


def test_anonymous_user_is_sent_to_log_in(client: Client, study: Study, codebook: Codebook) -> None:
    response = client.get(url("codebook", study))
    assert response.status_code == 302
    assert reverse("accounts:login") in response["Location"]


def test_annotator_reads_the_codebook_but_cannot_edit_it(
    client: Client, study: Study, annotator_a: User, codebook: Codebook
) -> None:
    login(client, annotator_a)
    page = client.get(url("codebook", study))
    assert page.status_code == 200
    assert b"The job stops progressing." in page.content  # definitions are shown
    assert b"Installation problems." in page.content  # and the criteria
    assert b"Add a dimension" not in page.content
    hang = category(study, "hang")
    for target in [
        url("category", study, hang.pk),
        url("proposals", study),
        url("load", study),
        url("category-split", study, hang.pk),
        url("category-reassign", study, hang.pk),
        url("dimension-add", study),
    ]:
        assert client.get(target).status_code == 403, target
    for target, data in [
        (url("category", study, hang.pk), {"edit-name": "Mine now"}),
        (url("category-merge", study, hang.pk), {"target": category(study, "crash").pk}),
        (url("category-retire", study, hang.pk), {}),
        (url("category-delete", study, hang.pk), {}),
        (url("proposal-action", study, hang.pk, "accept"), {}),
        (url("dimension-action", study, hang.dimension_id, "retire"), {}),
    ]:
        assert client.post(target, data).status_code == 403, target
    assert category(study, "hang").status == CategoryStatus.ACTIVE
    assert Codebook.objects.get(pk=codebook.pk).version == 1


def test_a_category_of_another_study_is_404(
    client: Client, study: Study, lead: User, codebook: Codebook
) -> None:
    other = Study.objects.create(slug="other", name="Other")
    from apps.taxonomy.codebook_spec import codebook_from_data
    from apps.taxonomy.loading import load_codebook

    load_codebook(other, codebook_from_data(CODEBOOK))
    foreign = Category.objects.get(dimension__codebook__study=other, key="hang")
    login(client, lead)
    assert client.get(url("category", study, foreign.pk)).status_code == 404
    assert client.post(url("category-retire", study, foreign.pk)).status_code == 404


# --- Pages and partials ------------------------------------------------------------------------------


def test_lead_gets_the_editor_page_and_htmx_gets_partials(
    client: Client, study: Study, lead: User, codebook: Codebook
) -> None:
    login(client, lead)
    page = client.get(url("codebook", study))
    assert page.status_code == 200
    assert b"<html" in page.content and b'id="category-panel"' in page.content
    trees = client.get(url("trees", study), **HTMX)
    assert b"<html" not in trees.content and b'id="codebook-trees"' in trees.content
    hang = category(study, "hang")
    panel = client.get(url("category", study, hang.pk), **HTMX)
    assert panel.status_code == 200
    assert b"<html" not in panel.content
    assert b"Training &amp; Evaluation &gt; Program Failure &gt; Hang" in panel.content
    full = client.get(url("category", study, hang.pk))
    assert b"<html" in full.content and b"Merge into" in full.content


def test_codebook_page_queries_do_not_grow_with_the_codebook(
    client: Client,
    study: Study,
    lead: User,
    annotator_a: User,
    codebook: Codebook,
    django_assert_num_queries: Any,
) -> None:
    login(client, lead)
    client.get(url("codebook", study))  # warm the session
    figures_changed(study.pk)  # both views count the labels (the counts are cached between changes)
    with CaptureQueriesContext(connection) as small:
        assert client.get(url("codebook", study)).status_code == 200
    symptom = dimension(study, "symptom")
    for n in range(25):
        extra = services.add_category(symptom, key=f"extra-{n}", name=f"Extra {n}", actor=lead)
        put_label(study, annotator_a, extra)
        put_gold(study, extra)
    services.retire_category(category(study, "slow"), actor=lead)
    services.propose_category(symptom, "Proposed one", None, "", annotator_a)
    with django_assert_num_queries(len(small.captured_queries)):
        response = client.get(url("codebook", study))
    assert b"Extra 24" in response.content
    html = response.content.decode()  # every category, the retired one too, opens its own panel
    for key in ("hang", "extra-24", "slow"):
        link = url("category", study, category(study, key).pk)
        assert f'href="{link}" hx-get="{link}"' in html, key


def test_annotator_codebook_page_queries_are_constant_too(
    client: Client,
    study: Study,
    lead: User,
    annotator_a: User,
    codebook: Codebook,
    django_assert_num_queries: Any,
) -> None:
    login(client, annotator_a)
    client.get(url("codebook", study))
    with CaptureQueriesContext(connection) as small:
        client.get(url("codebook", study))
    for n in range(10):
        services.add_category(dimension(study, "symptom"), key=f"more-{n}", name=f"More {n}", actor=lead)
    with django_assert_num_queries(len(small.captured_queries)):
        client.get(url("codebook", study))


def test_annotator_sees_own_proposals_but_not_others(
    client: Client, study: Study, annotator_a: User, annotator_b: User, codebook: Codebook
) -> None:
    symptom = dimension(study, "symptom")
    services.propose_category(symptom, "Alice's idea", None, "", annotator_a)
    services.propose_category(symptom, "Bob's idea", None, "", annotator_b)
    login(client, annotator_a)
    page = client.get(url("codebook", study)).content.decode()
    assert "Alice&#x27;s idea" in page and "Bob&#x27;s idea" not in page
    history = client.get(url("history", study)).content.decode()
    assert "Alice&#x27;s idea" in history and "Bob&#x27;s idea" not in history


# --- Editing through the panel -----------------------------------------------------------------------


def test_renaming_through_htmx_returns_the_panel_and_signals_the_change(
    client: Client, study: Study, lead: User, codebook: Codebook
) -> None:
    login(client, lead)
    hang = category(study, "hang")
    data = {"edit-name": "Hang or deadlock", "edit-definition": "Stops.", "edit-examples": "a\n\nb"}
    response = client.post(url("category", study, hang.pk), data, **HTMX)
    assert response.status_code == 200
    assert "codebook-changed" in _triggers(response)
    assert "Saved “Hang or deadlock” (renamed from “Hang”)." in response.content.decode()
    hang.refresh_from_db()
    assert (hang.name, hang.definition, hang.examples) == ("Hang or deadlock", "Stops.", ["a", "b"])
    change = CodebookChange.objects.get(codebook=codebook, kind=ChangeKind.RENAME)
    assert change.actor == lead


def test_without_htmx_a_change_redirects_with_a_message(
    client: Client, study: Study, lead: User, codebook: Codebook
) -> None:
    login(client, lead)
    hang = category(study, "hang")
    response = client.post(url("category", study, hang.pk), {"edit-name": "Stuck"})
    assert response.status_code == 302
    assert response["Location"] == url("category", study, hang.pk)
    page = client.get(response["Location"])
    assert "Saved “Stuck”" in page.content.decode()


def test_invalid_input_and_refusals_come_back_as_422_with_the_message(
    client: Client, study: Study, lead: User, codebook: Codebook
) -> None:
    login(client, lead)
    training, hang = category(study, "training"), category(study, "hang")
    empty = client.post(url("category", study, hang.pk), {"edit-name": ""}, **HTMX)
    assert empty.status_code == 422
    assert b"This field is required." in empty.content
    into_child = client.post(url("category-merge", study, training.pk), {"target": hang.pk}, **HTMX)
    assert into_child.status_code == 422
    assert "which lies inside it" in into_child.content.decode()
    under_child = client.post(url("category-move", study, training.pk), {"move-parent": hang.pk}, **HTMX)
    assert under_child.status_code == 422
    assert "which lies inside it" in under_child.content.decode()
    duplicate = client.post(
        url("category-add", study, hang.dimension_id), {"name": "Other", "key": "hang", "parent": ""}, **HTMX
    )
    assert duplicate.status_code == 422
    assert "The key &#x27;hang&#x27; is already used by “Hang”" in duplicate.content.decode()
    assert Codebook.objects.get(pk=codebook.pk).version == 1


def test_adding_moving_and_reordering_through_the_views(
    client: Client, study: Study, lead: User, codebook: Codebook
) -> None:
    login(client, lead)
    symptom = dimension(study, "symptom")
    form = client.get(
        url("category-add", study, symptom.pk) + f"?parent={category(study, 'setup').pk}", **HTMX
    )
    assert b"selected>" in form.content
    added = client.post(
        url("category-add", study, symptom.pk),
        {"name": "Driver", "key": "driver", "parent": category(study, "setup").pk, "examples": ""},
        **HTMX,
    )
    assert added.status_code == 200 and "codebook-changed" in _triggers(added)
    driver = category(study, "driver")
    assert driver.parent == category(study, "setup")
    moved = client.post(url("category-move", study, driver.pk), {"move-parent": ""}, **HTMX)
    assert moved.status_code == 200
    assert category(study, "driver").parent is None
    up = client.post(url("category-reorder", study, driver.pk), {"direction": "up"}, **HTMX)
    assert up.status_code == 200
    keys = list(
        Category.objects.active().filter(dimension=symptom, parent=None).values_list("key", flat=True)
    )
    assert keys == ["training", "driver", "setup"]


def test_merging_through_the_view_moves_labels(
    client: Client, study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    hang, crash = category(study, "hang"), category(study, "crash")
    label = put_label(study, annotator_a, hang)
    login(client, lead)
    response = client.post(url("category-merge", study, hang.pk), {"target": crash.pk}, **HTMX)
    assert response.status_code == 200
    assert "Merged “Hang” into “Crash”: 1 label(s)" in response.content.decode()
    label.refresh_from_db()
    assert (label.category, label.original_category) == (crash, hang)


def test_retire_restore_and_delete_through_the_views(
    client: Client, study: Study, lead: User, codebook: Codebook
) -> None:
    login(client, lead)
    slow = category(study, "slow")
    assert client.post(url("category-retire", study, slow.pk), **HTMX).status_code == 200
    assert category(study, "slow").status == CategoryStatus.RETIRED
    page = client.get(url("codebook", study)).content.decode()
    assert "Retired and merged (1)" in page
    assert client.post(url("category-restore", study, slow.pk), **HTMX).status_code == 200
    assert category(study, "slow").status == CategoryStatus.ACTIVE
    gone = client.post(url("category-delete", study, slow.pk))
    assert gone.status_code == 302 and gone["Location"] == url("codebook", study)
    assert not Category.objects.filter(key="slow").exists()
    refused = client.post(url("category-delete", study, category(study, "training").pk), **HTMX)
    assert refused.status_code == 422
    assert "Retire it instead" in refused.content.decode()


def test_split_then_reassign_in_bulk_with_a_filter(
    client: Client, study: Study, lead: User, annotator_a: User, annotator_b: User, codebook: Codebook
) -> None:
    slow = category(study, "slow")
    alice = [put_label(study, annotator_a, slow) for _ in range(3)]
    bob = put_label(study, annotator_b, slow)
    gold = put_gold(study, slow)
    login(client, lead)
    split = client.post(
        url("category-split", study, slow.pk),
        {
            "part1_name": "Slow communication",
            "part1_key": "slow-comm",
            "part2_name": "Slow I/O",
            "part2_key": "slow-io",
        },
    )
    assert split.status_code == 302
    assert split["Location"] == url("category-reassign", study, slow.pk)
    page = client.get(split["Location"])
    assert page.status_code == 200
    assert "Split “Slow” into “Slow communication” and “Slow I/O”" in page.content.decode()
    assert page.content.decode().count('name="label"') == 4
    filtered = client.get(url("category-reassign", study, slow.pk), {"annotator": "bob"}, **HTMX)
    assert b"<html" not in filtered.content
    assert filtered.content.decode().count('name="label"') == 1
    comm, io = category(study, "slow-comm"), category(study, "slow-io")
    everything_of_alice = client.post(
        url("category-reassign", study, slow.pk),
        {"annotator": "alice", "kind": "labels", "target": comm.pk, "all_matching": "on"},
        **HTMX,
    )
    assert everything_of_alice.status_code == 200
    assert "Moved 3 label(s) and 0 gold label(s)" in everything_of_alice.content.decode()
    chosen = client.post(
        url("category-reassign", study, slow.pk), {"target": io.pk, "label": [bob.pk], "decision": [gold.pk]}
    )
    assert chosen.status_code == 302
    assert set(
        LabelValue.objects.filter(pk__in=[a.pk for a in alice]).values_list("category", flat=True)
    ) == {comm.pk}
    bob.refresh_from_db()
    gold.refresh_from_db()
    assert (bob.category, bob.original_category, gold.category) == (io, slow, io)
    nothing = client.post(url("category-reassign", study, slow.pk), {"target": io.pk}, **HTMX)
    assert nothing.status_code == 422
    assert "Choose at least one label" in nothing.content.decode()


def test_dimensions_are_added_edited_and_reordered_through_the_views(
    client: Client, study: Study, lead: User, codebook: Codebook
) -> None:
    login(client, lead)
    added = client.post(
        url("dimension-add", study),
        {
            "name": "Fix pattern",
            "key": "fix",
            "multiple": "on",
            "applies_when": category(study, "fault", "issue-type").pk,
        },
        **HTMX,
    )
    assert added.status_code == 200 and "codebook-changed" in _triggers(added)
    fix = dimension(study, "fix")
    assert fix.multiple and fix.applies_when_category == category(study, "fault", "issue-type")
    edited = client.post(url("dimension", study, fix.pk), {"name": "Fix", "applies_when": ""}, **HTMX)
    assert edited.status_code == 200
    fix.refresh_from_db()
    assert (fix.name, fix.multiple, fix.applies_when_category) == ("Fix", False, None)
    assert client.post(url("dimension-action", study, fix.pk, "up"), **HTMX).status_code == 200
    refused = client.post(url("dimension-action", study, dimension(study, "issue-type").pk, "retire"), **HTMX)
    assert refused.status_code == 422
    assert "Symptom applies only when" in refused.content.decode()


# --- Proposals ---------------------------------------------------------------------------------------


def test_the_workbench_proposes_a_code_and_gets_the_option_partial(
    client: Client, study: Study, annotator_a: User, codebook: Codebook
) -> None:
    login(client, annotator_a)
    response = client.post(
        url("propose", study),
        {
            "dimension": "symptom",
            "name": "Hangs",
            "parent": "program-failure",
            "reason": "stuck",
            "input_name": "f1-symptom",
        },
        **HTMX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    proposal = Category.objects.get(key="hangs")
    assert 'type="checkbox" name="f1-symptom" value="hangs" checked' in html
    assert (
        "Similar to the existing category “Training &amp; Evaluation &gt; Program Failure &gt; Hang”" in html
    )
    detail = _triggers(response)["category-proposed"]
    assert detail == {
        "id": proposal.pk,
        "key": "hangs",
        "name": "Hangs",
        "dimension": "symptom",
        "parent": "program-failure",
        "warnings": [
            "Similar to the existing category “Training & Evaluation > Program Failure > Hang”: "
            "is it the same code?"
        ],
        "created": True,
    }
    assert (proposal.status, proposal.proposed_by) == (CategoryStatus.PROPOSED, annotator_a)


def test_without_an_input_name_the_proposal_answer_is_a_confirmation(
    client: Client, study: Study, annotator_a: User, codebook: Codebook
) -> None:
    login(client, annotator_a)
    response = client.post(url("propose", study), {"dimension": "issue-type", "name": "Performance"}, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert "Proposed “Performance” in Issue type: you can use it now" in html
    assert "<input" not in html
    again = client.post(url("propose", study), {"dimension": "issue-type", "name": "performance"}, **HTMX)
    assert "You had already proposed “Performance”" in again.content.decode()
    assert _triggers(again)["category-proposed"]["created"] is False


def test_a_bad_proposal_is_422_with_the_reason(
    client: Client, study: Study, annotator_a: User, codebook: Codebook
) -> None:
    login(client, annotator_a)
    unknown = client.post(url("propose", study), {"dimension": "fix", "name": "X"}, **HTMX)
    assert unknown.status_code == 422
    assert "no active dimension with the key &#x27;fix&#x27;" in unknown.content.decode()
    bad_parent = client.post(
        url("propose", study), {"dimension": "symptom", "name": "X", "parent": "nope"}, **HTMX
    )
    assert bad_parent.status_code == 422
    assert "Symptom has no category with the key &#x27;nope&#x27;" in bad_parent.content.decode()
    assert not Category.objects.proposals().exists()


def test_proposing_without_htmx_redirects_to_the_codebook(
    client: Client, study: Study, annotator_a: User, codebook: Codebook
) -> None:
    login(client, annotator_a)
    assert client.get(url("propose", study)).status_code == 200
    response = client.post(url("propose", study), {"dimension": "symptom", "name": "Timeout"})
    assert response.status_code == 302 and response["Location"] == url("codebook", study)
    assert Category.objects.proposals().get().name == "Timeout"


def test_the_lead_accepts_merges_and_rejects_proposals_from_the_queue(
    client: Client, study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    symptom = dimension(study, "symptom")
    accept = services.propose_category(symptom, "Timeout", None, "", annotator_a).category
    merge = services.propose_category(symptom, "Hangs", None, "", annotator_a).category
    reject = services.propose_category(symptom, "Weird", None, "", annotator_a).category
    label = put_label(study, annotator_a, reject)
    login(client, lead)
    queue = client.get(url("proposals", study)).content.decode()
    assert (
        "Timeout" in queue
        and "Similar to <strong>Training &amp; Evaluation &gt; Program Failure &gt; Hang" in queue
    )
    accepted = client.post(url("proposal-action", study, accept.pk, "accept"), **HTMX)
    assert accepted.status_code == 200 and "codebook-changed" in _triggers(accepted)
    merged = client.post(
        url("proposal-action", study, merge.pk, "merge"),
        {f"p{merge.pk}-target": category(study, "hang").pk},
        **HTMX,
    )
    assert merged.status_code == 200
    refused = client.post(url("proposal-action", study, reject.pk, "reject"), {}, **HTMX)
    assert refused.status_code == 422
    assert "holds 1 label(s): choose the category they move to" in refused.content.decode()
    rejected = client.post(
        url("proposal-action", study, reject.pk, "reject"),
        {f"p{reject.pk}-move_to": category(study, "crash").pk},
    )
    assert rejected.status_code == 302
    statuses = dict(
        Category.objects.filter(pk__in=[accept.pk, merge.pk, reject.pk]).values_list("key", "status")
    )
    assert statuses == {"timeout": "active", "hangs": "merged", "weird": "rejected"}
    label.refresh_from_db()
    assert label.category == category(study, "crash")
    assert b"No open proposals." in client.get(url("proposals", study)).content


# --- History, downloads, loading -----------------------------------------------------------------------


def test_history_lists_changes_and_a_version_shows_the_codebook_as_it_was(
    client: Client, study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    services.rename_category(category(study, "hang"), "Stuck", actor=lead)
    login(client, annotator_a)
    history = client.get(url("history", study)).content.decode()
    assert "“Hang” → “Stuck”" in history and "lena" in history
    old = client.get(url("version", study, 1)).content.decode()
    assert "<strong>Hang</strong>" in old and "Stuck" not in old
    assert "The codebook is now at version 2" in old
    new = client.get(url("version", study, 2)).content.decode()
    assert "<strong>Stuck</strong>" in new and "This is the current version." in new
    assert client.get(url("version", study, 9)).status_code == 404
    older = client.get(url("version-export", study, 1, "yaml"))
    assert older["Content-Disposition"] == 'attachment; filename="ddp-codebook-v1.yaml"'
    assert b"name: Hang\n" in older.content


def test_downloads_have_the_right_names_and_counts_only_for_leads(
    client: Client, study: Study, lead: User, annotator_a: User, codebook: Codebook
) -> None:
    put_gold(study, category(study, "hang"))
    login(client, annotator_a)
    response = client.get(url("export", study, "json"))
    assert response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == 'attachment; filename="ddp-codebook-v1.json"'
    assert json.loads(response.content)["name"] == CODEBOOK["name"]
    assert b"Counts are gold labels" not in client.get(url("export", study, "md")).content
    assert client.get(url("export", study, "exe")).status_code == 404
    login(client, lead)
    assert b"Counts are gold labels" in client.get(url("export", study, "md")).content


def test_loading_a_file_in_the_browser_previews_then_applies(
    client: Client, study: Study, lead: User, codebook: Codebook
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = json.loads(json.dumps(CODEBOOK))
    data["dimensions"][0]["categories"][0]["name"] = "Bug"
    login(client, lead)
    upload = SimpleUploadedFile("codebook.json", json.dumps(data).encode(), content_type="application/json")
    preview = client.post(url("load", study), {"file": upload})
    assert preview.status_code == 200
    assert "rename issue-type/fault: name &#x27;Fault&#x27; → &#x27;Bug&#x27;" in preview.content.decode()
    assert Codebook.objects.get(pk=codebook.pk).version == 1  # the preview wrote nothing
    applied = client.post(
        url("load", study), {"text": "\n" + json.dumps(data), "format": "json", "apply": "1"}
    )
    assert applied.status_code == 302
    assert category(study, "fault", "issue-type").name == "Bug"
    assert Codebook.objects.get(pk=codebook.pk).version == 2
    bad = SimpleUploadedFile("codebook.yaml", b"name: x\ndimensions: [{key: A}]\n")
    refused = client.post(url("load", study), {"file": bad})
    assert refused.status_code == 422
    assert "Codebook refused, nothing written" in refused.content.decode()


def test_history_shows_label_counts_to_leads_only(
    client: Client, study: Study, lead: User, annotator_a: User, annotator_b: User, codebook: Codebook
) -> None:
    put_label(study, annotator_b, category(study, "hang"))
    services.merge_category(category(study, "hang"), category(study, "crash"), actor=lead)
    login(client, annotator_a)
    seen = client.get(url("history", study)).content.decode()
    assert "into Training &amp; Evaluation &gt; Program Failure &gt; Crash" in seen
    assert "label(s)" not in seen
    login(client, lead)
    assert "1 label(s), 0 gold label(s) moved" in client.get(url("history", study)).content.decode()
