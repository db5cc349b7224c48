"""Issue #26 points 1-3 in Chromium, with e-mail through a real SMTP conversation (a sink on 127.0.0.1):
a lead invites an address; the invitee follows the e-mailed link, creates their account and labels;
resets their password by e-mail; the owner changes their role and removes them, and their labels stay."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import timezone

from apps.accounts.models import Membership, Role, Study, User
from apps.annotation import services as labelling
from apps.annotation.models import Annotation, Assignment
from apps.corpus.models import Item
from tests.annotation.conftest import Book, book, items, make_round  # noqa: F401  (fixtures)
from tests.browser import sign_in, watched_page
from tests.smtp_sink import SMTPSink, body, smtp_sink

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("SCREENSHOTS_DIR", "")
PASSWORD = "correct-horse-battery"  # tests/factories.py
ADA_FIRST = "ada-first-passphrase"
ADA_NEW = "ada-second-passphrase"


@pytest.fixture
def sink(settings: Any, live_server: Any) -> Iterator[SMTPSink]:
    with smtp_sink() as server:
        settings.MAILERS = {
            "default": {
                "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
                "OPTIONS": {"host": "127.0.0.1", "port": server.port, "timeout": 10},
            }
        }
        settings.SITE_URL = live_server.url
        yield server


def _link(text: str, path: str) -> str:
    found = re.search(r"https?://\S*" + re.escape(path) + r"\S*", text)
    assert found is not None, text
    return found.group(0)


def _shot(page: Any, name: str) -> None:
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/{name}.png", full_page=True)


def test_an_invited_annotator_joins_labels_resets_their_password_and_leaves_their_labels_behind(
    live_server: Any,
    browser: Any,
    sink: SMTPSink,
    study: Study,
    book: Book,  # noqa: F811  (the fixture imported above)
    items: list[Item],  # noqa: F811
    owner: User,
    lead: User,
) -> None:
    base = live_server.url
    round_items = items[:2]
    Item.objects.filter(pk__in=[i.pk for i in round_items]).update(
        body_html="<p>NCCL watchdog timeout</p>", rendered_at=timezone.now()
    )
    make_round(study, 1, round_items)  # a round of two items, not assigned yet

    # The lead invites an address from the members page.
    lena = watched_page(browser)
    lena.set_default_timeout(20_000)
    sign_in(lena, base, "lena", PASSWORD)
    lena.goto(f"{base}/studies/{study.slug}/members/")
    lena.fill("#id_invite-email", "ada@example.org")
    lena.select_option("#id_invite-role", "annotator")
    lena.get_by_role("button", name="Invite").click()
    lena.wait_for_selector("text=Invitation sent to ada@example.org as annotator.")
    assert "ada@example.org" in lena.locator(".invitations-table").inner_text()
    _shot(lena, "members-invited")

    # The invitee receives it over SMTP, follows the link and creates their account.
    invitation = sink.wait_for(lambda m: m["To"] == "ada@example.org" and "Invitation" in m["Subject"])
    link = _link(body(invitation), "/invite/")
    ada = watched_page(browser, expected_console=("404",))
    ada.set_default_timeout(20_000)
    ada.goto(link)
    assert "lena invites you" in ada.content()
    assert ada.locator("#id_email").input_value() == "ada@example.org"
    _shot(ada, "invitation-signup")
    ada.get_by_label("Username").fill("ada")
    ada.get_by_label("Password", exact=True).fill(ADA_FIRST)
    ada.get_by_label("Password (again)").fill(ADA_FIRST)
    ada.get_by_role("button", name="Create my account and join").click()
    ada.wait_for_url(f"{base}/studies/{study.slug}/")
    assert "you are annotator of this study" in ada.content()
    ada_user = User.objects.get(username="ada")
    assert Membership.objects.get(study=study, user=ada_user).role == Role.ANNOTATOR

    # The lead gives her the round; she labels the first item (a how-to question) and leaves one open.
    labelling.assign_round(study, 1, ["ada"], overlap=1, actor=lead)
    ada.goto(f"{base}/studies/{study.slug}/label/next/")
    ada.wait_for_selector("#workbench .dim.focused")
    url = ada.url
    for key in ("2", "1", "s"):
        ada.keyboard.press(key)
    ada.wait_for_url(lambda u: u != url)
    labelled = Annotation.objects.get(assignment__annotator=ada_user, submitted_at__isnull=False)

    # She forgets her password and resets it by e-mail, then signs in with the new one by address.
    ada.context.clear_cookies()
    ada.goto(f"{base}/login/")
    ada.get_by_role("link", name="Forgot your password?").click()
    ada.fill("input[name=email]", "ada@example.org")
    _shot(ada, "password-reset")
    ada.get_by_role("button", name="Reset My Password").click()
    ada.wait_for_url("**/accounts/password/reset/done/")
    reset = sink.wait_for(lambda m: m["To"] == "ada@example.org" and "Password Reset" in m["Subject"])
    ada.goto(_link(body(reset), "/accounts/password/reset/key/"))
    ada.fill("input[name=password1]", ADA_NEW)
    ada.fill("input[name=password2]", ADA_NEW)
    _shot(ada, "password-reset-new")
    ada.get_by_role("button", name="Change Password").click()
    ada.wait_for_url("**/accounts/password/reset/key/done/")
    sign_in(ada, base, "ada@example.org", ADA_NEW)
    assert ada.url == f"{base}/"

    # The owner makes her a lead, then removes her: her label stays, her open item returns to the pool.
    olivia = watched_page(browser)
    olivia.set_default_timeout(20_000)
    sign_in(olivia, base, "olivia", PASSWORD)
    olivia.goto(f"{base}/studies/{study.slug}/members/")
    row = olivia.locator('tr[data-member="ada"]')
    row.locator("select[name=role]").select_option("lead")
    row.get_by_role("button", name="Change").click()
    olivia.wait_for_selector("text=ada is now lead.")
    assert Membership.objects.get(study=study, user=ada_user).role == Role.LEAD
    row = olivia.locator('tr[data-member="ada"]')
    assert (
        row.locator("td.num").nth(0).inner_text() == "1" and row.locator("td.num").nth(1).inner_text() == "1"
    )
    _shot(olivia, "members-roles")
    row.locator("summary").click()
    row.get_by_role("button", name="Remove ada").click()
    olivia.wait_for_selector("text=ada was removed; their submitted labels stay.")
    assert "1 open item went back to the pool" in olivia.content()
    assert olivia.locator('tr[data-member="ada"]').count() == 0
    assert not Membership.objects.filter(study=study, user=ada_user).exists()
    assert Annotation.objects.filter(pk=labelled.pk, assignment__annotator=ada_user).exists()
    assert not Assignment.objects.filter(annotator=ada_user, status="open").exists()

    # The study is closed to her now.
    assert ada.goto(f"{base}/studies/{study.slug}/").status == 404
    for page in (lena, ada, olivia):
        assert page.problems == [], page.problems
