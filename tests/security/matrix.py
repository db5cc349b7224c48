"""Who may do what, for every URL of the project: the permission matrix.

Each URL name maps to a `Rule`: who may use it (`access`), which methods it takes, how to fill its URL
from the test world, and what an allowed caller gets. `expected()` turns a rule into the status each of
the six roles must get; tests/security/test_permission_matrix.py walks Django's URL resolver and fails
for any URL that has no entry here, so a new page or endpoint cannot ship without deciding its access.

Access levels:
  public       anyone, logged in or not
  user         any logged-in user (anonymous: 302 to the login page, or 401 from the API)
  member       members of the study; outsiders get 404 (a study's existence is not disclosed)
  lead         leads and owners; annotators get 403, outsiders 404
  own          only the annotator whose object it is (alice's assignment): everyone else 404
  own_or_lead  the object's annotator, or a lead or owner of the study; the other annotator 404
  staff        Django admin: non-staff are sent to the admin login
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.api.world import World

ROLES = ("anonymous", "outsider", "annotator", "other_annotator", "lead", "owner")
OK = "ok"  # any answer that is not a refusal (401, 403, 404, 405) nor a server error
REFUSALS = frozenset({401, 403, 404, 405})

Kwargs = Callable[[World], dict[str, Any]]


def study(w: World) -> dict[str, Any]:
    return {"slug": w.study.slug}


def item(n: int, key: str = "pk") -> Kwargs:
    return lambda w: {"slug": w.study.slug, key: w.items[n].pk}


def assignment(user: str, n: int) -> Kwargs:
    return lambda w: {"slug": w.study.slug, "pk": w.assignment(user, n).pk}


def extra(name: str, **more: Any) -> Kwargs:
    return lambda w: {"slug": w.study.slug, "pk": w.extras[name].pk, **more}


def membership(username: str) -> Kwargs:
    def kwargs(w: World) -> dict[str, Any]:
        from apps.accounts.models import Membership

        return {"slug": w.study.slug, "pk": Membership.objects.get(study=w.study, user__username=username).pk}

    return kwargs


def category(key: str, **more: Any) -> Kwargs:
    def kwargs(w: World) -> dict[str, Any]:
        from apps.taxonomy.models import Category

        found = Category.objects.get(dimension__codebook__study=w.study, key=key)
        return {"slug": w.study.slug, "pk": found.pk, **more}

    return kwargs


def dimension(key: str, field_name: str = "pk", **more: Any) -> Kwargs:
    def kwargs(w: World) -> dict[str, Any]:
        from apps.taxonomy.models import Dimension

        found = Dimension.objects.get(codebook__study=w.study, key=key)
        value = found.key if field_name == "key" else found.pk
        return {"slug": w.study.slug, field_name: value, **more}

    return kwargs


def guidelines_version(w: World) -> dict[str, Any]:
    """Version 1 of the world's guidelines, published on first use."""
    from apps.taxonomy import guidelines

    version = guidelines.current(w.study) or guidelines.publish(w.study, "Read *carefully*.", actor=w.lead)
    return {"slug": w.study.slug, "number": version.number}


@dataclass(frozen=True)
class Rule:
    access: str
    methods: tuple[str, ...] = ("GET",)
    kwargs: Kwargs = field(default=lambda w: {})
    get: int | str = 200
    post: int | str = OK
    query: str = ""
    api: bool = False
    write: str | None = None  # the access level of the other methods, when stricter than GET's

    def access_for(self, method: str) -> str:
        return self.write if self.write is not None and method != "GET" else self.access


def page(access: str, *methods: str, **options: Any) -> Rule:
    return Rule(access, methods or ("GET",), **options)


def api(access: str, *methods: str, **options: Any) -> Rule:
    return Rule(access, methods or ("GET",), api=True, **options)


# The ids of the world's objects are filled in by the kwargs functions; see tests/api/world.py.
MATRIX: dict[str, Rule] = {
    # --- accounts ---------------------------------------------------------------------------------
    "accounts:login": page("public", "GET", "POST"),
    "accounts:logout": page("public", "GET", "POST", get=OK, post=302),  # GET: a confirmation page
    "accounts:study-list": page("user", "GET", "POST"),
    "accounts:profile": page("user", "GET", "POST"),
    "accounts:revoke-token": page(
        "own", "POST", kwargs=lambda w: {"pk": w.extras["alice_token"].pk}, post=302
    ),
    "accounts:members": page("lead", "GET", "POST", kwargs=study),
    "accounts:settings": page("lead", "GET", "POST", kwargs=study),  # an empty form: 400, named fields
    "accounts:archive": page("lead", "POST", kwargs=study, post=302),  # leads: 403 (SPECIAL)
    "accounts:delete": page("lead", "POST", kwargs=study, post=400),  # no slug typed; leads: 403 (SPECIAL)
    "accounts:member-role": page("lead", "POST", kwargs=membership("alice"), post=302),
    "accounts:member-remove": page("lead", "POST", kwargs=membership("alice"), post=302),
    "accounts:invitation-create": page("lead", "POST", kwargs=study),
    "accounts:invitation-revoke": page("lead", "POST", kwargs=extra("invitation"), post=302),
    # The link is the credential: anyone holding it sees the invitation; POST joins (or makes an account).
    "accounts:invitation": page(
        "public", "GET", "POST", kwargs=lambda w: {"token": w.extras["invitation_token"]}
    ),
    # --- accounts: django-allauth's pages (config/urls.py "accounts/") --------------------------------
    "account_login": page("public", "GET", "POST"),  # the same rate-limited view as accounts:login
    "account_logout": page("public", "GET", "POST", get=OK, post=302),
    "account_inactive": page("public"),
    "account_signup": page("public", "GET", "POST", get=OK, post=OK),  # closed unless OPEN_SIGNUP
    "account_reauthenticate": page("user", "GET", "POST", get=OK),
    "account_email": page("user", "GET", "POST", get=OK),
    "account_email_verification_sent": page("public", get=OK),
    "account_change_password": page("user", "GET", "POST", get=OK),
    "account_set_password": page("user", "GET", "POST", get=OK),
    "account_reset_password": page("public", "GET", "POST", get=OK),
    "account_reset_password_done": page("public", get=OK),
    "account_reset_password_from_key": page(
        "public", "GET", "POST", kwargs=lambda w: {"uidb36": "1", "key": "not-a-key"}, get=OK
    ),
    "account_reset_password_from_key_done": page("public", get=OK),
    # An unknown key: the page says so (GET); confirming it (POST) is 404.
    "account_confirm_email": page(
        "public", "GET", "POST", kwargs=lambda w: {"key": "not-a-key"}, get=OK, post=404
    ),
    "account_confirm_login_code": page("public", "GET", "POST", get=OK),
    # --- corpus -----------------------------------------------------------------------------------
    "corpus:item-list": page("member", kwargs=study),
    "corpus:item-detail": page("member", kwargs=item(0)),
    "corpus:items-bulk": page("lead", "POST", kwargs=study),
    "corpus:saved-view-save": page("member", "POST", kwargs=study),
    "corpus:saved-view-delete": page("own", "POST", kwargs=extra("saved_view"), post=302),
    "corpus:screen": page("lead", kwargs=study),
    "corpus:screen-item": page("lead", "POST", kwargs=item(0)),
    "corpus:item-link-add": page("lead", "POST", kwargs=item(0)),
    "corpus:item-link-remove": page(
        "lead",
        "POST",
        kwargs=lambda w: {"slug": w.study.slug, "pk": w.items[0].pk, "link_id": w.extras["item_link"].pk},
    ),
    "corpus:import": page("lead", "GET", "POST", kwargs=study),
    "corpus:import-job": page("lead", kwargs=extra("import_job")),
    "corpus:import-restart": page("lead", "POST", kwargs=extra("import_job")),
    # --- codebook ---------------------------------------------------------------------------------
    "taxonomy:codebook": page("member", kwargs=study),
    "taxonomy:trees": page("member", kwargs=study),
    "taxonomy:export": page("member", kwargs=lambda w: {"slug": w.study.slug, "fmt": "json"}),
    "taxonomy:load": page("lead", "GET", "POST", kwargs=study),
    "taxonomy:history": page("member", kwargs=study),
    "taxonomy:version": page("member", kwargs=lambda w: {"slug": w.study.slug, "version": 1}),
    "taxonomy:version-export": page(
        "member", kwargs=lambda w: {"slug": w.study.slug, "version": 1, "fmt": "json"}
    ),
    "taxonomy:propose": page("member", "GET", "POST", kwargs=study),
    "taxonomy:proposals": page("lead", kwargs=study),
    "taxonomy:proposal-action": page("lead", "POST", kwargs=extra("proposal", action="accept")),
    "taxonomy:dimension-add": page("lead", "GET", "POST", kwargs=study),
    "taxonomy:dimension": page("lead", "GET", "POST", kwargs=dimension("fix")),
    "taxonomy:category-add": page("lead", "GET", "POST", kwargs=dimension("fix")),
    "taxonomy:dimension-action": page("lead", "POST", kwargs=dimension("fix", action="retire")),
    "taxonomy:category": page("lead", "GET", "POST", kwargs=category("hang")),
    "taxonomy:category-move": page("lead", "POST", kwargs=category("hang")),
    "taxonomy:category-reorder": page("lead", "POST", kwargs=category("hang")),
    "taxonomy:category-merge": page("lead", "POST", kwargs=category("hang")),
    "taxonomy:category-split": page("lead", "GET", "POST", kwargs=category("hang")),
    "taxonomy:category-reassign": page("lead", "GET", "POST", kwargs=category("hang")),
    "taxonomy:category-retire": page("lead", "POST", kwargs=category("code")),
    "taxonomy:category-restore": page("lead", "POST", kwargs=category("code")),
    "taxonomy:category-delete": page("lead", "POST", kwargs=category("code")),
    # --- labelling --------------------------------------------------------------------------------
    "annotation:queue": page("member", kwargs=study),
    "annotation:guidelines": page("member", "GET", "POST", kwargs=study, write="lead", post=302),  # publishes
    "annotation:guidelines-acknowledge": page("member", "POST", kwargs=study, post=302),
    "annotation:guidelines-version": page("member", kwargs=guidelines_version),
    "annotation:decided": page("member", kwargs=study),
    "annotation:inbox": page("member", kwargs=study),
    "annotation:thread": page(
        "lead", "GET", "POST", kwargs=lambda w: {"slug": w.study.slug, "number": 1, "item_id": w.items[0].pk}
    ),
    "annotation:comment": page("own", "POST", kwargs=extra("comment"), post=302),
    "annotation:cause": page(  # like the thread: leads, and the item's annotators once revealed
        "lead",
        "POST",
        kwargs=lambda w: {"slug": w.study.slug, "number": 1, "item_id": w.items[0].pk},
        post=302,
    ),
    "annotation:causes": page("lead", "GET", "POST", kwargs=study, post=302),
    "annotation:next": page("member", kwargs=study, get=302),
    "annotation:workbench": page("own", kwargs=assignment("alice", 2)),
    "annotation:draft": page("own", "POST", kwargs=assignment("alice", 2)),
    "annotation:submit": page("own", "POST", kwargs=assignment("alice", 2)),
    "annotation:revise": page("own", "POST", kwargs=assignment("alice", 0)),
    "annotation:reveal": page("lead", "POST", kwargs=lambda w: {"slug": w.study.slug, "number": 1}),
    "annotation:round-kind": page(
        "lead", "POST", kwargs=lambda w: {"slug": w.study.slug, "number": 1}, post=302
    ),
    "annotation:round-pass-mark": page(
        "lead", "POST", kwargs=lambda w: {"slug": w.study.slug, "number": 1}, post=302
    ),
    "annotation:close-discussion": page(
        "lead", "POST", kwargs=lambda w: {"slug": w.study.slug, "number": 1}, post=302
    ),
    "annotation:discussion": page("member", kwargs=lambda w: {"slug": w.study.slug, "number": 1}),
    "annotation:rounds": page("lead", kwargs=study),
    "annotation:draw": page("lead", "POST", kwargs=study),
    "annotation:assign": page("lead", "POST", kwargs=study),
    "annotation:add-items": page("lead", "POST", kwargs=study),
    "annotation:add-from-grid": page("lead", "POST", kwargs=study),
    "annotation:round-detail": page("lead", kwargs=lambda w: {"slug": w.study.slug, "number": 1}),
    "annotation:reassign": page(
        "lead",
        "POST",
        kwargs=lambda w: {"slug": w.study.slug, "number": 1, "pk": w.assignment("alice", 2).pk},
    ),
    "annotation:screening": page("lead", kwargs=study),
    "annotation:screen": page("lead", "POST", kwargs=item(3)),
    # --- agreement --------------------------------------------------------------------------------
    "agreement:dashboard": page("lead", kwargs=study),
    "agreement:models": page("lead", kwargs=study),
    "agreement:compute": page("lead", "POST", kwargs=study),
    "agreement:check": page("lead", kwargs=study),
    "agreement:progress": page("lead", kwargs=extra("snapshot")),
    "agreement:cell-items": page(
        "lead", kwargs=study, query="?dimension=type&a=alice&b=bob&row=fault&col=howto"
    ),
    "agreement:table": page(
        "lead",
        kwargs=lambda w: {"slug": w.study.slug, "name": "pairs", "fmt": "csv"},
        query="?dimension=type",
    ),
    # --- adjudication -----------------------------------------------------------------------------
    "adjudication:study-detail": page("member", kwargs=study),
    "adjudication:queue": page("lead", kwargs=study),
    "adjudication:resolve": page("lead", "GET", "POST", kwargs=item(0, "item_id")),
    "adjudication:claim": page("lead", "POST", kwargs=item(0, "item_id")),
    "adjudication:history": page("lead", kwargs=item(0, "item_id")),
    # --- export -----------------------------------------------------------------------------------
    "export:export": page("lead", kwargs=study),
    "export:preview": page("lead", kwargs=study, get=OK),  # a partial for htmx; a redirect without
    "export:counts": page("lead", kwargs=study),
    "export:start": page("lead", "POST", kwargs=study),
    "export:stream": page("lead", kwargs=study, get=OK),
    "export:job": page("lead", kwargs=extra("export_job")),
    "export:download": page("lead", kwargs=extra("done_export")),
    "export:paper": page("lead", kwargs=study),
    "quality:quality": page("lead", kwargs=study),
    "raters:models": page("lead", kwargs=study),
    "raters:rater-add": page("lead", "POST", kwargs=study, post=400),  # an empty form: refused, named
    "raters:run-start": page("lead", "POST", kwargs=extra("model_rater"), post=400),
    "raters:run": page("lead", kwargs=extra("model_run")),
    "raters:run-cancel": page("lead", "POST", kwargs=extra("model_run"), post=302),
    "raters:suggestions": page(
        "lead", "POST", kwargs=lambda w: {"slug": w.study.slug, "number": 1}, post=302
    ),
    "quality:csv": page("lead", kwargs=study),
    "quality:gold-items": page("lead", "POST", kwargs=study, post=422),  # an empty form: refused, named
    "quality:gold-seed": page("lead", "POST", kwargs=study, post=422),
    "quality:training": page("lead", "POST", kwargs=study, post=422),
    "quality:my-work": page("member", kwargs=study),
    "export:paper-figure": page(
        "lead", kwargs=lambda w: {"slug": w.study.slug, "name": "distribution", "fmt": "svg"}, get=OK
    ),  # 400 when the world's study has no decision in the dimension: still no refusal
    "export:paper-crosstab": page("lead", kwargs=lambda w: {"slug": w.study.slug, "fmt": "csv"}),
    "export:paper-methods": page("lead", kwargs=study),
    "export:paper-still-right": page("lead", "POST", kwargs=item(0, "item_id"), post=302),
    "export:paper-send-back": page("lead", "POST", kwargs=item(0, "item_id"), post=302),
    "export:paper-methods-file": page("lead", kwargs=lambda w: {"slug": w.study.slug, "fmt": "md"}),
    # --- API: schema and docs ----------------------------------------------------------------------
    "api-schema": api("public"),
    "api-schema-root": api("public"),
    "api-docs": page("public"),
    "api-docs-root": page("public"),
    "api-not-found": api("public", kwargs=lambda w: {"rest": "no/such/endpoint/"}, get=404),
    # --- API: accounts ----------------------------------------------------------------------------
    "api-me": api("user"),
    "api-study-list": api("user"),
    "api-study-detail": api("member", "GET", "PATCH", "DELETE", kwargs=study, write="lead", post=OK),
    "api-member-detail": api(
        "lead", "PATCH", "DELETE", kwargs=lambda w: {"slug": w.study.slug, "username": "alice"}
    ),
    "api-invitation-list": api("lead", "GET", "POST", kwargs=study),
    "api-invitation-detail": api("lead", "DELETE", kwargs=extra("invitation")),
    "api-invitation-accept": api("user", "POST"),
    "api-member-list": api("lead", "GET", "POST", kwargs=study),
    # --- API: corpus ------------------------------------------------------------------------------
    "api-item-list": api("member", kwargs=study),
    "api-item-detail": api("member", kwargs=item(0)),
    "api-import-list": api("lead", "GET", "POST", kwargs=study),
    "api-import-detail": api("lead", kwargs=extra("import_job")),
    # --- API: codebook ----------------------------------------------------------------------------
    "api-codebook": api("member", "GET", "PUT", kwargs=study, write="lead"),
    "api-category-create": api("lead", "POST", kwargs=dimension("fix", "key")),
    "api-category": api("member", "GET", "PATCH", kwargs=category("hang"), write="lead"),
    "api-category-action": api("lead", "POST", kwargs=category("code", action="retire")),
    "api-proposal-create": api("member", "POST", kwargs=study),
    # --- API: labelling ---------------------------------------------------------------------------
    "api-round-list": api("lead", "GET", "POST", kwargs=study),
    "api-round-detail": api("lead", kwargs=lambda w: {"slug": w.study.slug, "number": 1}),
    "api-round-reveal": api(
        "member", "GET", "POST", kwargs=lambda w: {"slug": w.study.slug, "number": 1}, write="lead"
    ),
    "api-item-thread": api("lead", "GET", "POST", kwargs=item(0)),
    "api-assignment-revision": api("own_or_lead", "GET", "POST", kwargs=assignment("alice", 0), write="own"),
    "api-round-assign": api("lead", "POST", kwargs=lambda w: {"slug": w.study.slug, "number": 1}),
    "api-assignment-list": api("lead", kwargs=study),
    "api-assignment-detail": api("own_or_lead", kwargs=assignment("alice", 2)),
    "api-assignment-annotation": api(
        "own_or_lead", "GET", "POST", kwargs=assignment("alice", 1), write="own"
    ),
    "api-annotation-list": api("lead", kwargs=study),
    "api-my-queue": api("member", kwargs=study),
    "api-my-annotations": api("member", kwargs=study),
    # --- API: agreement ---------------------------------------------------------------------------
    "api-agreement-latest": api("lead", kwargs=study),
    "api-agreement-list": api("lead", "GET", "POST", kwargs=study),
    "api-agreement-detail": api("lead", kwargs=extra("snapshot")),
    # --- API: adjudication ------------------------------------------------------------------------
    "api-study-status": api("member", kwargs=study),
    "api-disagreements": api("lead", kwargs=study),
    "api-item-labels": api("lead", kwargs=item(0, "item_id")),
    "api-decision-list": api("lead", "GET", "POST", kwargs=study),
    # --- API: export ------------------------------------------------------------------------------
    "api-export-list": api("lead", "GET", "POST", kwargs=study),
    "api-export-detail": api("lead", kwargs=extra("export_job")),
    "api-export-download": api("lead", kwargs=extra("done_export")),
    "api-export-items-jsonl": api("lead", kwargs=study),
    # --- Django admin: its own staff gate ----------------------------------------------------------
    "admin:index": page("staff"),
    "admin:login": page("public", "GET", "POST"),
    "admin-login-limited": page("public", "GET", "POST"),  # the same login, rate-limited
    "admin:accounts_user_changelist": page("staff"),
    "admin:accounts_apitoken_changelist": page("staff"),
}

# Every other admin URL sits behind the same `admin_view` staff check as admin:index.
ADMIN_NAMESPACE = "admin:"

# Exceptions to the access levels, each with its reason.
SPECIAL: dict[tuple[str, str, str], int | str] = {
    # Leads change a study's settings; only owners archive or delete it (docs/decisions/0002-roles.md).
    ("accounts:archive", "POST", "lead"): 403,
    ("accounts:delete", "POST", "lead"): 403,
    ("api-study-detail", "DELETE", "lead"): 403,
    ("api-study-detail", "DELETE", "owner"): 400,  # no slug typed as `confirm`
}


def refusal(rule: Rule, role: str, method: str = "GET") -> int | None:
    """The status refusing `role`, or None when the role may use the URL with `method`."""
    access = rule.access_for(method)
    if role == "anonymous":
        if access == "public":
            return None
        return 401 if rule.api else 302
    if access in ("public", "user"):
        return None
    if access == "staff":
        return 302  # nobody in the cast is staff: the admin sends them to its login
    if role == "outsider":
        return 404
    if access == "member":
        return None
    if access == "lead":
        return 403 if role in ("annotator", "other_annotator") else None
    if access == "own":
        return None if role == "annotator" else 404
    if access == "own_or_lead":
        return 404 if role == "other_annotator" else None
    raise AssertionError(f"unknown access level {access!r}")


def expected(name: str, rule: Rule, method: str, role: str) -> int | str:
    special = SPECIAL.get((name, method, role))
    if special is not None:
        return special
    refused = refusal(rule, role, method)
    if not rule.api:
        # Pages: login_required runs first, then the method check, then the access check.
        if refused is not None and (role == "anonymous" or rule.access == "staff"):
            return refused
        if method not in rule.methods:
            return 405
        if refused is not None:
            return refused
    else:
        # DRF: authentication and the study/role check run in initial(), before the method check.
        if refused is not None:
            return refused
        if method not in rule.methods:
            return 405
    if method == "GET":
        return rule.get
    return rule.post
