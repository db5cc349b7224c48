"""Untrusted text never runs as script: the XSS corpus (tests/security/xss_vectors.py) rendered in Chromium.

Every vector goes in through the real write paths: item titles, bodies (HTML, Markdown and plain text),
comments, tags and metadata through the import service (so bodies are rendered by the real sanitizer);
a file whose bad rows echo vectors into the import's error list; codebook names, descriptions,
definitions, criteria and examples through `load_codebook`; proposed codes and their reasons; memos
through `submit_annotation`; a decision's rationale through `decide`. Then headless Chromium opens every
page that shows them, as the lead and as an annotator, and watches for any sign of script: a dialog, a
console marker, a request to the marker host, a CSP violation report, or, in the DOM itself, an event
handler attribute, a javascript:/data:/vbscript: URL or an active element (script, iframe, object, ...).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from apps.accounts.models import Role, Study, User
from apps.adjudication.services import decide
from apps.annotation import services as labelling
from apps.annotation.models import Assignment
from apps.corpus.jira import issue_to_record as jira_issue_to_record
from apps.corpus.jira_links import detail_links, remote_links
from apps.corpus.models import Item, ItemLink
from apps.corpus.params import FileParams
from apps.corpus.records import FileChange, ItemRecord, LinkRecord
from apps.corpus.services import import_in_foreground, render_pending, upsert_records
from apps.corpus.services.links import store_links
from apps.taxonomy.codebook_spec import codebook_from_data
from apps.taxonomy.loading import load_codebook
from apps.taxonomy.models import Dimension
from apps.taxonomy.services import propose_category
from tests.factories import MembershipFactory, StudyFactory, UserFactory

from .xss_vectors import MARKER_HOST, VECTORS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FORMATS = ("html", "markdown", "text")

# Run in the page after load: what the sanitizer must never let through, whatever CSP would block.
DOM_CHECK = """
() => {
  const bad = [];
  const urlAttrs = ['href', 'src', 'action', 'formaction', 'xlink:href', 'data', 'poster', 'background',
                    'srcdoc', 'code', 'codebase', 'ping', 'hx-get', 'hx-post', 'hx-put', 'hx-delete'];
  const active = ['IFRAME', 'FRAME', 'FRAMESET', 'OBJECT', 'EMBED', 'APPLET', 'BASE', 'PARAM'];
  for (const el of document.querySelectorAll('body *')) {
    for (const attr of el.attributes) {
      const name = attr.name.toLowerCase();
      const value = attr.value.replace(/[\\u0000-\\u0020]/g, '').toLowerCase();
      if (name.startsWith('on') || name.startsWith('hx-on')) bad.push(el.tagName + ' ' + name);
      if (urlAttrs.includes(name) && /^(javascript|vbscript|data|livescript):/.test(value))
        bad.push(el.tagName + ' ' + name + '=' + value.slice(0, 40));
      if (name === 'style' && /expression|javascript:|url\\(/.test(value)) bad.push(el.tagName + ' style');
      if (name === 'hx-vals' && value.startsWith('js:')) bad.push(el.tagName + ' hx-vals=js:');
    }
    if (active.includes(el.tagName)) bad.push(el.tagName);
    if (el.tagName === 'SCRIPT' && !(el.src && new URL(el.src).pathname.startsWith('/static/')))
      bad.push('SCRIPT ' + (el.src || 'inline'));
    if (el.tagName === 'STYLE' || (el.tagName === 'LINK' && el.closest('body'))) bad.push(el.tagName);
    if (el.tagName === 'META' && el.closest('body')) bad.push('META in body');
  }
  return bad;
}
"""


@dataclass
class Watch:
    """Everything a page did that only a script (or a smuggled resource) would do."""

    dialogs: list[str] = field(default_factory=list)
    markers: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    csp: list[str] = field(default_factory=list)
    dom: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        return [
            *(f"dialog: {d}" for d in self.dialogs),
            *(f"console marker: {m}" for m in self.markers),
            *(f"request to the marker host: {r}" for r in self.requests),
            *(f"CSP violation: {c}" for c in self.csp),
            *(f"in the DOM: {d}" for d in self.dom),
        ]


@dataclass
class XssStudy:
    study: Study
    lead: User
    alice: User
    bob: User
    items: list[Item]
    jobs: list[int]
    alice_assignments: list[int]
    decided_item: int
    disputed_items: list[int]


def _import_file(tmp_path: Path, study: Study, lead: User, name: str, rows: list[dict[str, Any]]) -> int:
    path = tmp_path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    job = import_in_foreground(study, FileParams(format="jsonl", filename=name), upload=path, user=lead)
    return job.pk


def _as_name(text: str) -> str:
    """A vector as a name may hold it: names are one line without '>' (the path separator)."""
    return " ".join(text.replace(">", "\u203a").split())[:120]


def _codebook() -> dict[str, Any]:
    """Two dimensions whose every text field carries vectors; names take those a name may hold."""
    categories = []
    for n in range(0, len(VECTORS), 4):
        chunk = VECTORS[n : n + 4] + [""] * 4
        categories.append(
            {
                "key": f"c{n}",
                "name": f"Code {n} {_as_name(chunk[0])}",
                "definition": chunk[0],
                "include": chunk[1],
                "exclude": chunk[2],
                "examples": [chunk[3], "<b>bold example</b>"] if chunk[3] else [],
            }
        )
    return {
        "name": "XSS codebook <script>alert('XSS')</script>",
        "dimensions": [
            {
                "key": "kind",
                "name": "Kind <img src=x onerror=alert('XSS')",
                "description": "\n".join(VECTORS[:20]),
                "multiple": False,
                "categories": [
                    {"key": "bug", "name": "Bug", "definition": VECTORS[0]},
                    {"key": "question", "name": "Question", "definition": VECTORS[1]},
                ],
            },
            {"key": "xss", "name": "Vectors", "multiple": True, "categories": categories},
        ],
    }


@pytest.fixture
def xss_study(tmp_path: Path, settings: Any) -> XssStudy:
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    study = StudyFactory(slug="xss", name="XSS <svg onload=alert('XSS')>")
    lead = MembershipFactory(study=study, role=Role.LEAD, user=UserFactory(username="lena")).user
    alice = MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username="alice")).user
    bob = MembershipFactory(study=study, role=Role.ANNOTATOR, user=UserFactory(username="bob")).user
    load_codebook(study, codebook_from_data(_codebook()), actor=lead)
    rows = [
        {
            "url": f"https://github.com/xss/corpus/issues/{n}",
            "title": vector[:480],
            "body": vector,
            "body_format": FORMATS[n % 3],
            "tags": [vector[:60], "xss"],
            "note": vector,
            "comments": [{"author": vector[:100], "body": vector, "body_format": FORMATS[(n + 1) % 3]}],
        }
        for n, vector in enumerate(VECTORS)
    ]
    jobs = [_import_file(tmp_path, study, lead, "xss.jsonl", rows)]
    bad_rows = [{"url": vector[:200], "title": "bad row"} for vector in VECTORS[:40]]
    jobs.append(_import_file(tmp_path, study, lead, "bad.jsonl", bad_rows))
    items = list(Item.objects.filter(study=study).order_by("id"))
    assert len(items) == len(VECTORS), "every vector became an item through the import service"
    store_links({items[n].pk: _fix_links(n, vector) for n, vector in enumerate(VECTORS)}, timezone.now())
    # two GitHub links, two of Jira's development panel and a remote link per vector; javascript: dropped
    assert ItemLink.objects.filter(item__study=study).count() == 5 * len(VECTORS)
    upsert_records(study, [_jira_issue(n, vector) for n, vector in enumerate(VECTORS)])
    render_pending(study)
    items += list(Item.objects.filter(study=study, source="jira").order_by("id"))

    labelling.draw_round(study, number=1, size=6, seed=1, actor=lead)
    labelling.assign_round(study, 1, ["alice", "bob"], overlap=2, actor=lead)
    version = labelling.load_codebook(study).version
    kind = Dimension.objects.get(codebook__study=study, key="kind")
    for n, vector in enumerate(VECTORS[:10]):
        propose_category(kind, f"Proposal {n} {_as_name(vector)}", None, vector, alice)
    mine = list(Assignment.objects.filter(study=study, annotator=alice).order_by("position"))
    theirs = {a.item_id: a for a in Assignment.objects.filter(study=study, annotator=bob)}
    per_memo = -(-len(VECTORS) // len(mine))
    for n, assignment in enumerate(mine):
        memo = "\n".join(VECTORS[n * per_memo : (n + 1) * per_memo])
        labels = {"findings": [{"values": {"kind": ["bug"], "xss": ["c0"]}}], "memo": memo}
        labelling.submit_annotation(assignment, labels, alice, codebook_version=version)
        other = {"findings": [{"values": {"kind": ["question"], "xss": ["c4"]}}], "memo": VECTORS[-1 - n]}
        labelling.submit_annotation(theirs[assignment.item_id], other, bob, codebook_version=version)
    decided = Item.objects.get(pk=mine[0].item_id)
    decide(decided, [{"kind": ["bug"], "xss": ["c8"]}], actor=lead, rationale="\n".join(VECTORS),
           expected_decision_id=None)  # fmt: skip
    return XssStudy(
        study, lead, alice, bob, items, jobs, [a.pk for a in mine], decided.pk, [a.item_id for a in mine[1:]]
    )


def _jira_issue(n: int, vector: str) -> ItemRecord:
    """A Jira issue with the vector in wiki markup (Server) and in ADF text and link targets (Cloud)."""
    adf = {
        "type": "doc",
        "content": [
            {
                "type": "paragraph",
                "content": [
                    {"type": "text", "text": vector},
                    {"type": "text", "text": "link", "marks": [{"type": "link", "attrs": {"href": vector}}]},
                    {"type": "inlineCard", "attrs": {"url": vector}},
                ],
            },
            {
                "type": "codeBlock",
                "attrs": {"language": vector},
                "content": [{"type": "text", "text": vector}],
            },
        ],
    }
    wiki = f"h2. {vector}\n* {vector}\n[x|{vector}] {{code:{vector[:20]}}}{vector}{{code}}\n{{{{{vector}}}}}"
    issue = {
        "key": f"XSS-{n}",
        "fields": {
            "summary": vector[:400],
            "description": wiki,
            "comment": {"comments": [{"id": "1", "author": {"displayName": vector[:100]}, "body": adf}]},
        },
    }
    return jira_issue_to_record(issue, "https://jira.xss.test", cloud=False)


def _fix_links(n: int, vector: str) -> list[LinkRecord]:
    """A pull request and a commit carrying the vector in every text the Fix pane shows: title, state,
    description (Markdown), commit message (text), file name, diff lines, note; a link whose URL is one."""
    patch = f"@@ -1,2 +1,2 @@\n-{vector}\n+{vector}\n {vector}\n"
    files = [FileChange(filename=vector[:200], additions=1, deletions=1, patch=patch, truncated=n % 2 == 0)]
    return [
        LinkRecord(
            kind="pull_request",
            url=f"https://github.com/xss/corpus/pull/{1000 + n}",
            provenance="closing_keyword",
            title=vector[:480],
            state=vector[:32],
            body=vector,
            files=files,
            note=vector[:400],
        ),
        LinkRecord(
            kind="commit",
            url=f"https://github.com/xss/corpus/commit/{n:07x}",
            provenance="closed_by_commit",
            title=vector[:480],
            body=f"{vector}\n\n{vector}",
            files=files,
        ),
        LinkRecord(
            kind="commit", url=f"javascript:alert('XSS')//{n}", provenance="manual", title=vector[:80]
        ),
        *_jira_panel_links(n, vector),
    ]


def _jira_panel_links(n: int, vector: str) -> list[LinkRecord]:
    """Jira's development panel answers carrying the vector in a commit's message, display id and file
    path, in a pull request's name and status, and a remote link's title and summary (read by
    corpus.jira_links, as an import reads them)."""
    commit = {
        "id": f"{n:040x}",
        "displayId": vector[:40],
        "message": f"{vector}\n\n{vector}",
        "url": f"https://github.com/xss/jira/commit/{n:040x}",
        "files": [{"path": vector[:200], "changeType": vector[:20], "linesAdded": 1, "linesRemoved": 1}],
    }
    pull = {"id": vector[:20], "name": vector[:480], "status": vector[:20],
            "url": f"https://github.com/xss/jira/pull/{n + 1}"}  # fmt: skip
    remote = {"object": {"url": f"https://gitlab.example.org/xss/jira/-/merge_requests/{n + 1}",
                         "title": vector[:480], "summary": vector}, "relationship": vector[:40]}  # fmt: skip
    panel = {"detail": [{"repositories": [{"name": vector, "commits": [commit]}], "pullRequests": [pull]}]}
    return [*detail_links(panel), *remote_links([remote])]


LEAD_PAGES = (
    "taxonomy:codebook", "taxonomy:history", "taxonomy:proposals", "annotation:rounds",
    "annotation:screening", "agreement:dashboard", "adjudication:queue", "adjudication:study-detail",
    "export:export", "accounts:members",
)  # fmt: skip


def _pages(world: XssStudy) -> Iterator[tuple[User, str]]:
    slug = world.study.slug
    lead, alice = world.lead, world.alice

    def url(name: str, **kwargs: Any) -> str:
        return reverse(name, kwargs={"slug": slug, **kwargs})

    for after in range(0, len(world.items), 50):
        yield lead, url("corpus:item-list") + (f"?after={world.items[after - 1].pk}" if after else "")
    yield lead, url("corpus:item-list") + "?q=script"
    for item in world.items:
        yield lead, url("corpus:item-detail", pk=item.pk)
    yield lead, url("corpus:import")
    for job in world.jobs:
        yield lead, url("corpus:import-job", pk=job)
    for name in LEAD_PAGES:
        yield lead, url(name)
    yield lead, reverse("taxonomy:version", kwargs={"slug": slug, "version": 1})
    yield lead, url("annotation:round-detail", number=1)
    for item_id in world.disputed_items:
        yield lead, url("adjudication:resolve", item_id=item_id)
    yield lead, url("adjudication:history", item_id=world.decided_item)
    for name in ("taxonomy:codebook", "annotation:queue", "adjudication:study-detail", "corpus:item-list"):
        yield alice, url(name)
    for pk in world.alice_assignments:
        yield alice, url("annotation:workbench", pk=pk)
    yield alice, reverse("accounts:study-list")


def _session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def _watched_page(context: Any, watch: Watch) -> Any:
    page = context.new_page()
    page.on(
        "dialog", lambda dialog: (watch.dialogs.append(f"{page.url}: {dialog.message}"), dialog.dismiss())
    )

    def console(message: Any) -> None:
        text = message.text
        if "XSS-MARKER" in text:
            watch.markers.append(f"{page.url}: {text}")
        if "Content Security Policy" in text:
            watch.csp.append(f"{page.url}: {text[:300]}")

    page.on("console", console)
    page.on("request", lambda r: MARKER_HOST in r.url and watch.requests.append(f"{page.url} → {r.url}"))
    return page


def _open(page: Any, url: str, watch: Watch) -> None:
    response = page.goto(url, wait_until="load")
    assert response is not None and response.status == 200, f"{url}: {response.status if response else None}"
    page.wait_for_timeout(30)  # let timers, autofocus and htmx's load triggers fire
    watch.dom += [f"{url}: {d}" for d in page.evaluate(DOM_CHECK)]


def test_the_corpus_holds_at_least_a_hundred_distinct_vectors() -> None:
    assert len(set(VECTORS)) == len(VECTORS) >= 100


def test_no_vector_runs_on_any_page(xss_study: XssStudy, live_server: Any, browser: Any) -> None:
    watch = Watch()
    pages = list(_pages(xss_study))
    cookies = {user.pk: _session_cookie(user) for user in (xss_study.lead, xss_study.alice)}
    for user in (xss_study.lead, xss_study.alice):
        context = browser.new_context(base_url=live_server.url)
        context.add_cookies([{"name": "sessionid", "value": cookies[user.pk], "url": live_server.url}])
        context.route(f"**://{MARKER_HOST}/**", lambda route: route.abort())
        page = _watched_page(context, watch)
        for owner, path in pages:
            if owner == user:
                _open(page, live_server.url + path, watch)
        context.close()
    assert len(pages) > len(VECTORS)
    assert not watch.problems(), "\n".join(watch.problems()[:50])


def test_the_harness_sees_a_script_that_runs(browser: Any) -> None:
    """The detectors work: the same vectors, unsanitised in a blank page, are caught."""
    watch = Watch()
    raw = "".join(
        [
            "<script>alert('XSS')</script>",
            f"<img src=x onerror=\"fetch('https://{MARKER_HOST}/hit')\">",
            "<script>console.log('XSS-MARKER')</script>",
            "<a href=\"javascript:alert('XSS')\">x</a><iframe></iframe>",
        ]
    )
    page = browser.new_page()
    page.route(f"**://{MARKER_HOST}/**", lambda route: route.abort())
    page.on("dialog", lambda dialog: (watch.dialogs.append(dialog.message), dialog.dismiss()))
    page.on("console", lambda m: "XSS-MARKER" in m.text and watch.markers.append(m.text))
    page.on("request", lambda r: MARKER_HOST in r.url and watch.requests.append(r.url))
    page.set_content(raw)
    page.wait_for_timeout(200)
    watch.dom += page.evaluate(DOM_CHECK)
    assert watch.dialogs and watch.markers and watch.requests
    assert any("javascript:" in d for d in watch.dom) and any("IFRAME" in d for d in watch.dom)
