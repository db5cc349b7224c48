"""Sessions stay server-side and end when they should, read by hand-written statements (decision 0004).

`apps/accounts/sessions.py` and `apps/accounts/backends.py` replace the ORM reads of Django's database
sessions and ModelBackend; these tests hold them to Django's behaviour, through real requests.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.accounts.backends import REQUEST_STUDY, UserBackend
from apps.accounts.models import Role, Study, User
from apps.accounts.permissions import access_study
from apps.accounts.sessions import SessionStore

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"


@pytest.fixture
def alice(annotator_a: User) -> User:
    annotator_a.set_password(PASSWORD)
    annotator_a.save()
    return annotator_a


def logged_in(user: User) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def study_page(client: Client, study: Study) -> int:
    return client.get(f"/studies/{study.slug}/queue/").status_code


def test_a_logged_in_annotator_reaches_their_study(alice: User, study: Study) -> None:
    client = logged_in(alice)
    assert study_page(client, study) == 200
    session = Session.objects.get(session_key=client.session.session_key)
    assert SessionStore(session.session_key).load()["_auth_user_id"] == str(alice.pk)


def test_logging_out_ends_the_session_for_its_cookie(alice: User, study: Study) -> None:
    client = logged_in(alice)
    stolen = Client()
    stolen.cookies["sessionid"] = client.cookies["sessionid"].value
    assert study_page(stolen, study) == 200
    client.post("/logout/")
    assert study_page(stolen, study) == 302  # to the login page


def test_a_deleted_session_row_ends_the_session(alice: User, study: Study) -> None:
    client = logged_in(alice)
    Session.objects.filter(session_key=client.cookies["sessionid"].value).delete()
    assert study_page(client, study) == 302


def test_an_expired_session_is_not_accepted(alice: User, study: Study) -> None:
    client = logged_in(alice)
    Session.objects.filter(session_key=client.cookies["sessionid"].value).update(
        expire_date=timezone.now() - timedelta(seconds=1)
    )
    assert study_page(client, study) == 302


def test_an_unknown_or_malformed_session_key_is_anonymous(alice: User, study: Study) -> None:
    for key in ["x" * 32, "'; DROP TABLE django_session; --", ""]:
        client = Client()
        client.cookies["sessionid"] = key
        assert study_page(client, study) == 302, key
    assert SessionStore("nosuchkey0000000000000000000000").load() == {}
    assert study_page(logged_in(alice), study) == 200  # the statement is parameterised: sessions still work


def test_a_deactivated_user_is_logged_out_at_the_next_request(alice: User, study: Study) -> None:
    client = logged_in(alice)
    User.objects.filter(pk=alice.pk).update(is_active=False)
    assert study_page(client, study) == 302


def test_changing_the_password_ends_the_other_sessions(alice: User, study: Study) -> None:
    client = logged_in(alice)
    alice.set_password("another long passphrase")
    alice.save()
    assert study_page(client, study) == 302


def test_the_backend_loads_the_whole_user_or_none() -> None:
    backend = UserBackend()
    user = User.objects.create_user("dora", password=PASSWORD, email="dora@example.org", display_name="Dora")
    loaded = backend.get_user(user.pk)
    assert loaded is not None
    assert (loaded.pk, loaded.username, loaded.email, loaded.display_name, loaded.password) == (
        user.pk,
        "dora",
        "dora@example.org",
        "Dora",
        user.password,
    )
    assert loaded.check_password(PASSWORD)
    assert backend.get_user(user.pk + 1000) is None
    assert backend.get_user("not a number") is None
    assert backend.get_user(None) is None


def test_an_authenticated_request_reads_the_session_and_the_user_once_each(alice: User, study: Study) -> None:
    client = logged_in(alice)
    study_page(client, study)
    with CaptureQueriesContext(connection) as queries:
        assert study_page(client, study) == 200
    sql = [q["sql"] for q in queries.captured_queries]
    # each a prepared statement on PostgreSQL (`EXECUTE taxonomist_session`), plain elsewhere
    assert sum('FROM "django_session"' in s or "taxonomist_session" in s for s in sql) == 1
    assert sum('FROM "accounts_user"' in s or "taxonomist_user" in s for s in sql) == 1
    # on a study's URL the user comes with their membership: no read of its own
    assert not any("taxonomist_membership_" in s or s.lstrip().startswith("SELECT m.role") for s in sql)


def test_on_a_study_url_the_user_comes_with_their_membership_and_outsiders_get_404(
    alice: User, study: Study
) -> None:
    outsider = User.objects.create_user("olga", password=PASSWORD)
    assert study_page(logged_in(outsider), study) == 404
    assert logged_in(alice).get("/studies/no-such-study/queue/").status_code == 404
    assert study_page(logged_in(alice), study) == 200
    assert REQUEST_STUDY.get() is None  # the middleware forgets the study when the request ends


def test_the_membership_read_with_the_user_serves_one_access_for_that_study_only(
    alice: User, study: Study, django_assert_num_queries: Any
) -> None:
    access_study(User.objects.get(pk=alice.pk), study.slug)  # PostgreSQL prepares its statement, once
    token = REQUEST_STUDY.set(study.slug)
    try:
        user = UserBackend().get_user(alice.pk)
    finally:
        REQUEST_STUDY.reset(token)
    assert user is not None
    with django_assert_num_queries(0):
        assert access_study(user, study.slug) == (study, Role.ANNOTATOR)
    with django_assert_num_queries(1):  # used once: a second access reads again
        assert access_study(user, study.slug) == (study, Role.ANNOTATOR)
    token = REQUEST_STUDY.set("another-study")
    try:
        other = UserBackend().get_user(alice.pk)
    finally:
        REQUEST_STUDY.reset(token)
    with django_assert_num_queries(1):  # read for another slug: not taken for this one
        assert access_study(other, study.slug) == (study, Role.ANNOTATOR)
