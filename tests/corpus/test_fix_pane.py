"""The Fix pane on the item page and the workbench, and a lead adding or removing a link by URL."""

from __future__ import annotations

from typing import Any

import pytest
import responses
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Study, User
from apps.corpus.models import Item, ItemLink

from .conftest import sample

pytestmark = pytest.mark.django_db

API = "https://api.github.com"
PATCH = "@@ -1,3 +1,3 @@\n import torch\n-dist.init_process_group('nccl')\n+dist.init_process_group('gloo')\n"


@pytest.fixture
def linked_item(study: Study) -> Item:
    item = Item.objects.create(
        study=study, url="https://github.com/a/b/issues/1", source="github", title="NCCL hangs", body="x"
    )
    ItemLink.objects.create(
        item=item,
        kind="pull_request",
        url="https://github.com/a/b/pull/2",
        title="Use gloo on CPU",
        state="merged",
        provenance="closing_keyword",
        body="Fixes #1",
        files=[
            {"filename": "train.py", "additions": 1, "deletions": 1, "patch": PATCH, "truncated": False},
            {"filename": "logo.png", "additions": 0, "deletions": 0, "patch": "", "truncated": False},
        ],
        note="the diff of 1 file(s) is cut at 64,000 characters (big.py)",
    )
    return item


def page(client: Client, user: User, item: Item) -> str:
    client.force_login(user)
    response = client.get(reverse("corpus:item-detail", args=[item.study.slug, item.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_item_page_shows_each_file_of_the_fix_highlighted_with_its_counts(
    client: Client, lead: User, linked_item: Item
) -> None:
    html = page(client, lead, linked_item)

    assert 'id="fix-pane"' in html and "Fix <span" in html and "(1)" in html
    assert "Use gloo on CPU" in html and "Closing keyword" in html and ">merged<" in html
    assert (
        '<code class="fix-filename">train.py</code> <span class="add">+1</span> '
        '<span class="del">\u22121</span>' in html
    )
    assert '<span class="gi">+dist.init_process_group(&#39;gloo&#39;)</span>' in html or (
        "<span class=\"gi\">+dist.init_process_group('gloo')</span>" in html
    )
    assert '<details class="fix-file" open>' in html  # collapsible, the first files open
    assert "No diff: a binary file" in html  # logo.png
    assert "cut at 64,000 characters" in html
    assert "js/fix-pane.js" in html and "<kbd>f</kbd>" in html
    assert 'name="url"' in html and "Remove this link" in html  # a lead manages the links


def test_an_annotator_sees_the_fix_but_cannot_change_the_links(
    client: Client, annotator_a: User, linked_item: Item
) -> None:
    html = page(client, annotator_a, linked_item)
    assert "Use gloo on CPU" in html and "Remove this link" not in html and 'name="url"' not in html

    add = client.post(
        reverse("corpus:item-link-add", args=[linked_item.study.slug, linked_item.pk]), {"url": "x"}
    )
    link = linked_item.links.get()
    remove = client.post(
        reverse("corpus:item-link-remove", args=[linked_item.study.slug, linked_item.pk, link.pk])
    )
    assert (add.status_code, remove.status_code) == (403, 403)
    assert linked_item.links.count() == 1


@responses.activate
def test_a_lead_adds_a_pull_request_by_url_and_removes_it(client: Client, lead: User, study: Study) -> None:
    item = Item.objects.create(
        study=study, url="https://github.com/pygithub/pygithub/issues/28", source="github"
    )
    responses.get(f"{API}/repos/pygithub/pygithub/pulls/31", json={"title": "Fix labels", "state": "open"})
    responses.get(
        f"{API}/repos/pygithub/pygithub/pulls/31/files", json=sample("pygithub_PyGithub_pull_31_files.json")
    )
    client.force_login(lead)
    add_url = reverse("corpus:item-link-add", args=[study.slug, item.pk])

    response = client.post(add_url, {"url": "https://github.com/PyGithub/PyGithub/pull/31"}, follow=True)

    link = item.links.get()
    assert (link.provenance, link.title, link.added_by, len(link.files)) == ("manual", "Fix labels", lead, 45)
    html = response.content.decode()
    assert "Linked https://github.com/pygithub/pygithub/pull/31" in html and "Added by hand" in html
    refused = client.post(add_url, {"url": "https://example.org/not-a-pull"}, follow=True).content.decode()
    assert "Link not added: not a GitHub pull request or commit URL" in refused
    remove_url = reverse("corpus:item-link-remove", args=[study.slug, item.pk, link.pk])
    assert "Link removed." in client.post(remove_url, follow=True).content.decode()
    assert not item.links.exists()
    assert "not on this item any more" in client.post(remove_url, follow=True).content.decode()


@responses.activate
def test_a_pull_request_github_cannot_serve_is_still_linked_with_the_reason(
    client: Client, lead: User, study: Study, monkeypatch: Any
) -> None:
    monkeypatch.setattr("time.sleep", lambda _seconds: None)
    item = Item.objects.create(study=study, url="https://github.com/a/b/issues/1", source="github")
    responses.get(f"{API}/repos/a/b/pulls/9", status=401, json={"message": "Bad credentials"})
    client.force_login(lead)

    client.post(
        reverse("corpus:item-link-add", args=[study.slug, item.pk]), {"url": "https://github.com/a/b/pull/9"}
    )

    link = item.links.get()
    assert link.url == "https://github.com/a/b/pull/9" and "Not read from GitHub: token rejected" in link.note


def test_a_stack_overflow_item_shows_its_accepted_answer_in_the_fix_pane(
    client: Client, lead: User, study: Study
) -> None:
    item = Item.objects.create(
        study=study, url="https://stackoverflow.com/questions/7", source="stackoverflow", title="q", body="b"
    )
    item.comments.create(
        position=1,
        external_id="70",
        author="kim",
        body="Use gloo",
        body_html="<p>Use gloo</p>",
        is_answer=True,
        is_accepted=True,
    )

    html = page(client, lead, item)

    assert "Accepted answer by kim" in html and "https://stackoverflow.com/a/70" in html
    assert "Accepted by the asker" in html
