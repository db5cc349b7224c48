"""Discussion threads: open with the reveal, Markdown through the sanitizer, mentions, edit/delete with
history, unread counts in the inbox."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from apps.annotation import services
from apps.annotation.models import Comment, CommentEdit, Round
from apps.annotation.services import threads
from apps.annotation.threads import inbox
from tests.api.world import World, build_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(study: Any, owner: Any, lead: Any, annotator_a: Any, annotator_b: Any, outsider: Any) -> World:
    study.discuss_after_reveal = True
    study.save(update_fields=["discuss_after_reveal"])
    return build_world(study, owner, lead, annotator_a, annotator_b, outsider)


def _url(world: World, n: int = 0) -> str:
    return reverse(
        "annotation:thread", kwargs={"slug": world.study.slug, "number": 1, "item_id": world.items[n].pk}
    )


def _reveal(world: World) -> Round:
    services.reveal_round(world.study, 1, force=True)
    return Round.objects.get(pk=world.round.pk)


def test_a_thread_is_closed_to_annotators_while_the_round_is_blind(world: World, client: Any) -> None:
    client.force_login(world.bob)
    response = client.get(_url(world))
    assert response.status_code == 403 and b"still blind" in response.content
    assert client.post(_url(world), {"body": "psst"}).status_code == 403
    assert not Comment.objects.exists()


def test_an_annotator_who_does_not_hold_the_item_never_sees_its_thread(world: World, client: Any) -> None:
    _reveal(world)
    client.force_login(world.bob)
    assert client.get(_url(world, 3)).status_code == 404  # item 4 is in no round: no thread for bob


def test_after_a_forced_reveal_an_item_still_open_to_an_annotator_keeps_its_thread_from_them(
    world: World, client: Any
) -> None:
    """Bob has not labelled item 2 yet when the lead forces the reveal: alice's comment there, which says
    what she chose, must wait until he has (no page, no unread count)."""
    _reveal(world)
    client.force_login(world.alice)
    assert client.post(_url(world, 1), {"body": "I said question here, @bob"}).status_code in (200, 302)
    assert Comment.objects.count() == 1

    client.force_login(world.bob)
    response = client.get(_url(world, 1))
    assert response.status_code == 403 and b"Submit your own labels on this item first" in response.content
    assert b"I said question" not in response.content
    assert client.post(_url(world, 1), {"body": "what did you say?"}).status_code == 403
    assert inbox(world.study, world.bob) == []
    assert client.get(_url(world, 0)).status_code == 200  # the item he did label is open to him


def test_comments_are_sanitized_markdown_with_mentions_replies_and_unread_counts(
    world: World, client: Any
) -> None:
    round_ = _reveal(world)
    client.force_login(world.alice)
    client.post(_url(world), {"body": "**Why howto?** @bob <script>alert(1)</script>"})
    comment = Comment.objects.get()
    assert "<strong>Why howto?</strong>" in comment.body_html and "<script>" not in comment.body_html
    assert list(comment.mentions.values_list("username", flat=True)) == ["bob"]
    [row] = inbox(world.study, world.bob)
    assert (row.item, row.unread, row.mentioned) == (world.items[0], 1, True)
    client.force_login(world.bob)
    badge = client.get(
        reverse("annotation:inbox", kwargs={"slug": world.study.slug}),
        headers={"HX-Request": "true", "HX-Target": "inbox-badge"},
    ).content.decode()
    assert ">1</span> item await" in badge
    page = client.get(_url(world)).content.decode()  # reading marks the thread read
    assert "<strong>Why howto?</strong>" in page and inbox(world.study, world.bob) == []
    client.post(_url(world), {"body": "It reads as a question to me."})
    [alice_row] = inbox(world.study, world.alice)
    assert alice_row.unread == 1 and not alice_row.mentioned
    assert inbox(world.study, world.bob) == []
    assert round_.comments.count() == 2


def test_the_thread_polls_for_updates_without_a_reload(world: World, client: Any) -> None:
    round_ = _reveal(world)
    client.force_login(world.bob)
    page = client.get(_url(world)).content.decode()
    assert 'hx-trigger="every 10s"' in page
    threads.add_comment(round_, world.items[0], world.alice, "new one")
    partial = client.get(_url(world), headers={"HX-Request": "true", "HX-Target": "thread"}).content.decode()
    assert "new one" in partial and "<html" not in partial


def test_an_author_edits_and_deletes_their_comment_and_the_history_keeps_it(
    world: World, client: Any
) -> None:
    round_ = _reveal(world)
    comment = threads.add_comment(round_, world.items[0], world.alice, "first")
    client.force_login(world.bob)
    url = reverse("annotation:comment", kwargs={"slug": world.study.slug, "pk": comment.pk})
    assert client.post(url, {"body": "hijack"}).status_code == 404
    client.force_login(world.alice)
    client.post(url, {"body": "second"})
    client.post(url, {"delete": "1"})
    comment.refresh_from_db()
    assert comment.body == "" and comment.deleted_at is not None
    assert list(CommentEdit.objects.filter(comment=comment).values_list("body", "deleted")) == [
        ("first", False),
        ("second", True),
    ]


def test_an_empty_comment_is_refused_with_the_reason(world: World, client: Any) -> None:
    _reveal(world)
    client.force_login(world.alice)
    response = client.post(_url(world), {"body": "  "}, headers={"HX-Request": "true", "HX-Target": "thread"})
    assert response.status_code == 422 and b"the comment is empty" in response.content


def test_the_api_gives_the_thread_under_the_item_after_the_reveal(world: World) -> None:
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_login(world.bob)
    url = f"/api/v1/studies/{world.study.slug}/items/{world.items[0].pk}/thread/"
    refused = client.get(url)
    assert refused.status_code == 403 and "still blind" in refused.json()["detail"]
    _reveal(world)
    posted = client.post(url, {"body": "@alice why a fault?"}, format="json")
    assert posted.status_code == 201
    assert posted.json()["round"] == 1
    [comment] = posted.json()["comments"]
    assert (comment["author"], comment["mentions"]) == ("bob", ["alice"])
    assert (
        client.get(f"/api/v1/studies/{world.study.slug}/items/{world.items[3].pk}/thread/").status_code == 404
    )


def test_mentions_and_replies_are_emailed_only_where_email_is_configured_and_only_to_readers(
    world: World, client: Any, settings: Any, mailoutbox: Any, django_capture_on_commit_callbacks: Any
) -> None:
    _reveal(world)
    for user, address in (
        (world.alice, "alice@example.org"),
        (world.bob, "bob@example.org"),
        (world.lead, ""),
    ):
        user.email = address
        user.save(update_fields=["email"])
    client.force_login(world.alice)
    client.post(_url(world), {"body": "no e-mail is configured, @bob"})
    assert mailoutbox == []

    settings.EMAIL_NOTIFICATIONS = True  # as EMAIL_URL does; the outbox stands in for its SMTP server
    settings.SITE_URL = "https://taxonomist.example.org"
    with django_capture_on_commit_callbacks(execute=True):
        client.post(_url(world), {"body": "**Why howto**, @bob?"})
    [mail] = mailoutbox
    assert mail.to == ["bob@example.org"] and "alice mentioned you" in mail.subject
    assert "**Why howto**, @bob?" in mail.body and f"https://taxonomist.example.org{_url(world)}" in mail.body

    client.force_login(world.bob)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(_url(world), {"body": "It reads as a question."})
    assert [m.to for m in mailoutbox[1:]] == [["alice@example.org"]] and "bob replied" in mailoutbox[
        1
    ].subject

    # item 2: bob has not labelled it yet, so a mention there reaches him by no road, e-mail included
    client.force_login(world.alice)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(_url(world, 1), {"body": "I chose question, @bob"})
    assert len(mailoutbox) == 2


def test_a_leads_comment_in_a_blind_round_is_emailed_to_no_annotator_and_a_title_with_a_break_is_safe(
    world: World, client: Any, settings: Any, mailoutbox: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.EMAIL_NOTIFICATIONS = True
    for user in (world.alice, world.bob):
        user.email = f"{user.username}@example.org"
        user.save(update_fields=["email"])
    client.force_login(world.lead)
    with django_capture_on_commit_callbacks(
        execute=True
    ):  # round 1 is blind: the lead may write, nobody reads
        client.post(_url(world), {"body": "@alice bob chose howto"})
    assert mailoutbox == []

    _reveal(world)
    world.items[0].title = "Training hangs\nafter the restart"
    world.items[0].save(update_fields=["title"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(_url(world), {"body": "@alice what do you think?"})
    assert response.status_code == 302
    [mail] = mailoutbox
    assert mail.to == ["alice@example.org"] and "Training hangs after the restart" in mail.subject
