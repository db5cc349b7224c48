"""Taxonomist settings: one env-driven file.

Environment variables (all optional in development):
  DEBUG            "1" for development (default "1" unless DJANGO_ENV=production).
  DJANGO_ENV       "production" switches on the production checks below.
  SECRET_KEY       required in production.
  DATABASE_URL     e.g. postgres://postgres@127.0.0.1:5432/test; default: SQLite file var/db.sqlite3.
  REDIS_URL        e.g. redis://127.0.0.1:6379/0; Celery broker and cache. Default: the embedded
                   filesystem broker (no server) and the local-memory cache.
  CACHE_DIR        without REDIS_URL: a directory for a cache on files that the web server and the worker
                   share (`make run` sets var/cache), so that what a job changes is seen by the pages at
                   once (apps/core/generations.py); unset, each process has its own local-memory cache.
  ALLOWED_HOSTS    comma-separated; default localhost names.
  SQLITE_TIMEOUT   seconds a SQLite connection waits for the write lock (default 30).
  EMAIL_URL        e.g. smtp://user:password@smtp.example.org:587?tls=1; the mail server of account
                   mail (invitations, password resets, address verification) and of notifications (a
                   mention or a reply in a discussion thread), which it turns on. Unset: account mail is
                   printed on the console in development (`make run` shows reset links) and sent to an
                   SMTP server on localhost in production; no notification is sent.
  OPEN_SIGNUP      "1" lets anyone create an account at /accounts/signup/; default off: accounts come
                   from invitations (and from `add_member --create` or a lead's members page).
  ACCOUNT_EMAIL_VERIFICATION  "optional" (default: a new address gets a verification link, sign-in is not
                   held back), "mandatory" (no sign-in before the address is verified) or "none".
  GITHUB_CLIENT_ID / GITHUB_CLIENT_SECRET, GITLAB_CLIENT_ID / GITLAB_CLIENT_SECRET [GITLAB_URL],
  ORCID_CLIENT_ID / ORCID_CLIENT_SECRET [ORCID_BASE_DOMAIN]
                   sign-in with GitHub, GitLab or ORCID, each on only when its id and secret are set.
  DEFAULT_FROM_EMAIL  the sender of those e-mails (default taxonomist@localhost).
  SITE_URL         the address people open Taxonomist at, for links in e-mails (default http://127.0.0.1:8000).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import django_stubs_ext
import environ
from django.core.exceptions import ImproperlyConfigured

django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TAXONOMIST_VAR_DIR", BASE_DIR / "var"))

env = environ.Env()

PRODUCTION = env.str("DJANGO_ENV", default="development") == "production"
DEBUG = env.bool("DEBUG", default=not PRODUCTION)
TESTING = "pytest" in sys.modules or env.bool("TAXONOMIST_TESTING", default=False)

if PRODUCTION and not os.environ.get("SECRET_KEY"):
    raise ImproperlyConfigured("SECRET_KEY must be set when DJANGO_ENV=production.")
SECRET_KEY = env.str("SECRET_KEY", default="dev-insecure-taxonomist-key-change-me-0123456789abcdef")

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "rest_framework",
    "drf_spectacular",
    "allauth",
    "allauth.account",
    "apps.core",
    "apps.accounts",
    "apps.corpus",
    "apps.taxonomy",
    "apps.annotation",
    "apps.raters",
    "apps.agreement",
    "apps.adjudication",
    "apps.quality",
    "apps.export",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    # After authentication: the user, loaded lazily by the view, comes with their membership of the study.
    "apps.accounts.middleware.RequestStudyMiddleware",
]

if PRODUCTION:  # gunicorn serves static files itself; runserver does it in development
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.csp",
                "apps.accounts.context_processors.accounts",
            ],
        },
    },
]


# Form widgets render through Jinja2's copies of Django's widget templates (the same markup): through the
# Django template engine a widget cost 0.5-1 ms on the machines measured, so the rounds page's 13 widgets
# were 9 ms of a 19 ms page (docs/performance.md). Pages themselves stay Django templates.
FORM_RENDERER = "django.forms.renderers.Jinja2"

# The embedded default under concurrency (docs/operations.md, "Concurrency on SQLite"): WAL lets readers go on
# while one connection writes; every transaction starts IMMEDIATE, taking the write lock at BEGIN, so a
# transaction that reads and then writes waits its turn instead of failing with "database is locked" when
# another wrote first (a DEFERRED one cannot wait: its snapshot is stale); and a connection waits up to
# SQLITE_TIMEOUT seconds (default 30) for the lock before giving up.
SQLITE_OPTIONS: dict[str, object] = {
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    "transaction_mode": "IMMEDIATE",
    "timeout": env.float("SQLITE_TIMEOUT", default=30.0),
}


def _database() -> dict[str, object]:
    url = os.environ.get("DATABASE_URL")
    if not url:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "db.sqlite3",
            "OPTIONS": dict(SQLITE_OPTIONS),
            "TEST": {"NAME": VAR_DIR / "test-db.sqlite3"}
            if env.bool("SQLITE_TEST_FILE", default=False)
            else {},
        }
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in {"postgres", "postgresql", "pgsql", "psql", "sqlite"}:
        raise ImproperlyConfigured(
            f"DATABASE_URL must be a postgres:// or sqlite:// URL, got {url!r} "
            "(e.g. postgres://postgres@127.0.0.1:5432/taxonomist)."
        )
    try:
        config = env.db_url_config(url)
    except Exception as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL ({url!r}): {exc}") from exc
    if not config.get("ENGINE"):
        raise ImproperlyConfigured(f"DATABASE_URL has an unsupported scheme: {url!r}")
    # Persistent connections in production; none in tests, whose live servers must let go of the test DB.
    config.setdefault("CONN_MAX_AGE", env.int("CONN_MAX_AGE", default=0 if TESTING else 60))
    config["CONN_HEALTH_CHECKS"] = True
    if config["ENGINE"] == "django.db.backends.sqlite3":
        config["OPTIONS"] = {**SQLITE_OPTIONS, **dict(config.get("OPTIONS") or {})}
    if config["ENGINE"] == "django.db.backends.postgresql":
        # The same backend, whose health check asks the socket before sending SELECT 1 (apps/core/postgresql).
        config["ENGINE"] = "apps.core.postgresql"
    return dict(config)


DATABASES = {"default": _database()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"
# Django's database sessions and ModelBackend, each reading its row with one hand-written statement on every
# request instead of an ORM query (apps/core/sql.py, docs/decisions/0004-hand-written-hot-queries.md).
AUTHENTICATION_BACKENDS = ["apps.accounts.backends.UserBackend"]
SESSION_ENGINE = "apps.accounts.sessions"

REDIS_URL = env.str("REDIS_URL", default="")

CACHE_DIR = env.str("CACHE_DIR", default="")

if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
elif CACHE_DIR:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": CACHE_DIR,
            "OPTIONS": {"MAX_ENTRIES": 20_000},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
if TESTING:
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "accounts:study-list"
LOGOUT_REDIRECT_URL = "accounts:login"

# Accounts (django-allauth, docs/accounts.md): sign in by username or e-mail address, password change and
# reset by e-mail, address verification. Open sign-up is off unless OPEN_SIGNUP=1: accounts come from
# invitations (apps/accounts/invitations.py). The login rate limit is ours (apps/accounts/ratelimit.py) and
# wraps the one login view; allauth's own limits guard the mail it sends.
OPEN_SIGNUP = env.bool("OPEN_SIGNUP", default=False)
ACCOUNT_ADAPTER = "apps.accounts.adapters.AccountAdapter"
ACCOUNT_FORMS = {"login": "apps.accounts.forms.LoginForm"}
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "username*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_PREVENT_ENUMERATION = True
ACCOUNT_EMAIL_VERIFICATION = env.str("ACCOUNT_EMAIL_VERIFICATION", default="optional")
ACCOUNT_EMAIL_SUBJECT_PREFIX = "[Taxonomist] "
ACCOUNT_LOGOUT_REDIRECT_URL = LOGOUT_REDIRECT_URL
ACCOUNT_AUTHENTICATED_LOGIN_REDIRECTS = False  # the login page stays a page for a signed-in user too
ACCOUNT_SESSION_REMEMBER = None  # the form's "Remember me" box decides
ACCOUNT_DEFAULT_HTTP_PROTOCOL = "https" if PRODUCTION else "http"
ACCOUNT_RATE_LIMITS = {
    # Logins are limited by apps/accounts/ratelimit.py: failures per username and address (429 + Retry-After).
    "login": False,
    "login_failed": False,
    "reset_password": "20/m/ip,5/m/key",
    "reset_password_from_key": "20/m/ip",
    "signup": "20/m/ip",
    "confirm_email": "1/3m/key",
    "change_password": "5/m/user",
}

# Sign-in with GitHub, GitLab or ORCID: each provider is on only when its client id and secret are set.
_SOCIAL_PROVIDERS: dict[str, dict[str, object]] = {}
for _provider, _extra in (
    ("github", {"SCOPE": ["user:email"]}),
    ("gitlab", {"SCOPE": ["read_user"], "APPS_SETTINGS": {"gitlab_url": env.str("GITLAB_URL", default="")}}),
    ("orcid", {"BASE_DOMAIN": env.str("ORCID_BASE_DOMAIN", default="orcid.org"), "MEMBER_API": False}),
):
    _client_id = env.str(f"{_provider.upper()}_CLIENT_ID", default="")
    _secret = env.str(f"{_provider.upper()}_CLIENT_SECRET", default="")
    if _client_id and _secret:
        _app: dict[str, object] = {"client_id": _client_id, "secret": _secret}
        _app_settings = _extra.pop("APPS_SETTINGS", None)
        if isinstance(_app_settings, dict) and any(_app_settings.values()):
            _app["settings"] = {k: v for k, v in _app_settings.items() if v}
        _SOCIAL_PROVIDERS[_provider] = {"APPS": [_app], **_extra}
if _SOCIAL_PROVIDERS:
    INSTALLED_APPS += ["allauth.socialaccount"] + [
        f"allauth.socialaccount.providers.{p}" for p in _SOCIAL_PROVIDERS
    ]
    SOCIALACCOUNT_PROVIDERS = _SOCIAL_PROVIDERS
    SOCIALACCOUNT_ADAPTER = "apps.accounts.adapters.SocialAccountAdapter"
    SOCIALACCOUNT_EMAIL_AUTHENTICATION = False  # a provider's address never signs into an existing account
    SOCIALACCOUNT_LOGIN_ON_GET = False

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
MEDIA_ROOT = VAR_DIR / "media"
MEDIA_URL = "media/"
EXPORT_ROOT = VAR_DIR / "exports"
UPLOAD_ROOT = VAR_DIR / "uploads"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
MAX_IMPORT_UPLOAD_BYTES = env.int("MAX_IMPORT_UPLOAD_BYTES", default=200 * 1024 * 1024)
# The GitLab instances the import page offers (the worker sends GITLAB_TOKEN to the one picked); the first
# is the default. Add a self-managed instance's API root, e.g. https://gitlab.example.org/api/v4.
# E-mail. With EMAIL_URL: that server, for account mail and the notifications it turns on. Without: account
# mail (invitations, resets) is printed on the console in development, so `make run` shows its links, and
# goes to an SMTP server on localhost in production (Django's historical default, which the deploy check
# accepts); no notification is sent. Tests use Django's in-memory outbox.
EMAIL_NOTIFICATIONS = bool(os.environ.get("EMAIL_URL"))
MAILERS: dict[str, dict[str, object]] = {
    "default": {
        "BACKEND": "django.core.mail.backends.smtp.EmailBackend"
        if PRODUCTION
        else "django.core.mail.backends.console.EmailBackend"
    }
}
if EMAIL_NOTIFICATIONS:
    _email = env.email_url("EMAIL_URL")
    _query = {str(k).lower(): v for k, v in dict(_email.get("OPTIONS") or {}).items()}

    def _flag(value: object) -> bool:
        return str(value).lower() in {"1", "true", "yes", "on"}

    _options = {
        "host": _email.get("EMAIL_HOST"),
        "port": _email.get("EMAIL_PORT"),
        "username": _email.get("EMAIL_HOST_USER"),
        "password": _email.get("EMAIL_HOST_PASSWORD"),
        # smtp+tls:// or ?tls=1 (STARTTLS, port 587); smtps:// or ?ssl=1 (port 465)
        "use_tls": _email.get("EMAIL_USE_TLS") or _flag(_query.get("tls")) or None,
        "use_ssl": _email.get("EMAIL_USE_SSL") or _flag(_query.get("ssl")) or None,
        "timeout": 10,  # seconds: a mail server that hangs never holds a request for long
    }
    MAILERS = {
        "default": {
            "BACKEND": _email["EMAIL_BACKEND"],
            "OPTIONS": {k: v for k, v in _options.items() if v not in (None, "")},
        }
    }
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="taxonomist@localhost")
SITE_URL = env.str("SITE_URL", default="http://127.0.0.1:8000").rstrip("/")

# Environment variables a lead may name, in the browser, as a model rater's API key (the worker sends the
# key to the rater's server); any variable named MODEL_KEY_... too. The command line may name any.
MODEL_API_KEY_ENVS = env.list(
    "MODEL_API_KEY_ENVS",
    default=[
        "OPENAI_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "TOGETHER_API_KEY",
        "GROQ_API_KEY",
    ],
)

# The servers a lead may point a model rater at from the browser: URL prefixes (scheme, host, port, and a
# path the base URL must start with), or "*" for any. The worker sends each item's text there, and an
# address inside the operator's network would let a lead reach it, so production lists the hosted
# providers only; development (one person's machine, a local Ollama or vLLM) allows any. The command
# line may name any server.
MODEL_BASE_URLS = env.list(
    "MODEL_BASE_URLS",
    default=[
        "https://api.openai.com/v1",
        "https://openrouter.ai/api/v1",
        "https://api.together.xyz/v1",
        "https://api.groq.com/openai/v1",
    ]
    if PRODUCTION
    else ["*"],
)

GITLAB_API_URLS = env.list("GITLAB_API_URLS", default=["https://gitlab.com/api/v4"])
# The Jira sites a lead may search from the browser or the API (the worker sends JIRA_TOKEN there).
JIRA_API_URLS = env.list("JIRA_API_URLS", default=["https://issues.apache.org/jira"])

# Security headers. CSP: no inline script anywhere; htmx is vendored and loaded from 'self'.
from django.utils.csp import CSP  # noqa: E402

SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "https:", "data:"],
    "connect-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads no cookie (the token sits on <body>), but the admin's JS may.
if PRODUCTION:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
    SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# The API base (apps/core/api.py, which names no app) authenticates with these: the token first, so an
# anonymous request gets 401 with `WWW-Authenticate: Token`; then the session.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "apps.accounts.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.CursorPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Taxonomist API",
    "DESCRIPTION": "Import, label, measure agreement, adjudicate and export taxonomy studies.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Two choice sets share the field name "phase": a round's phase and an agreement report's labels.
    "ENUM_NAME_OVERRIDES": {
        "RoundPhaseEnum": "apps.annotation.models.RoundPhase",
        "AgreementPhaseEnum": [("blind", "blind"), ("discussed", "discussed")],
    },
}

# Celery. With REDIS_URL: Redis broker. Without: kombu's filesystem transport, which needs no server;
# `make run` starts a worker beside the web process (see docs/decisions/0001-embedded-broker.md).
CELERY_BROKER_URL = REDIS_URL or "filesystem://"
if not REDIS_URL:
    _queue_dir = VAR_DIR / "queue"
    for _sub in ("in", "processed", "control"):
        (_queue_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir / "in"),
        "data_folder_out": str(_queue_dir / "in"),
        "processed_folder": str(_queue_dir / "processed"),
        "control_folder": str(_queue_dir / "control"),
        "store_processed": False,
        # kombu looks for new messages once a second by default: a job then waits 0.5 s on average
        # before it starts. A directory listing ten times a second costs the worker next to nothing.
        "polling_interval": 0.1,
    }
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = 6 * 3600
CELERY_TASK_SOFT_TIME_LIMIT = 6 * 3600 - 60
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Tests run tasks in-process unless a test opts into a real worker.
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=TESTING)
CELERY_TASK_EAGER_PROPAGATES = True

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        # The HTTP clients of the model raters and importers: one INFO line per request (thousands in a
        # model run), and their URLs and request options may carry credentials (a base URL's user and
        # password): only their warnings and errors are logged (docs/security.md).
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        "openai": {"level": "WARNING"},
    },
}
