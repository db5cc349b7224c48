"""Login rate limiting: failed logins counted in the cache, per username and client address.

Contract: after `LOGIN_FAILURE_LIMIT` failed logins for one username from one address within
`LOGIN_FAILURE_WINDOW` seconds, further attempts for that pair are refused with 429 until the window
(counted from the first failure) has passed; a successful login clears the pair's count. An address
that fails `ADDRESS_FAILURE_LIMIT` times across any usernames in the window is refused too (password
spraying). The counters live in Django's default cache: Redis when REDIS_URL is set, so every web
process shares them; the local-memory cache otherwise (one process, which is what `make run` serves).

Keys hash the username (case-folded) and the address, so no username is stored in clear in the cache.
The address is REMOTE_ADDR: X-Forwarded-For is written by the client and cannot be trusted unless a
proxy rewrites it, and our deployment (gunicorn behind the compose network) gives the real peer.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, HttpResponseBase

LOGIN_FAILURE_LIMIT = 10
ADDRESS_FAILURE_LIMIT = 100
LOGIN_FAILURE_WINDOW = 15 * 60

View = Callable[..., HttpResponseBase]
logger = logging.getLogger(__name__)


def _limit(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


def client_address(request: HttpRequest) -> str:
    return str(request.META.get("REMOTE_ADDR") or "unknown")


def _key(kind: str, *parts: str) -> str:
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:40]
    return f"login-failures:{kind}:{digest}"


def _pair_key(username: str, address: str) -> str:
    return _key("pair", username.strip().casefold(), address)


def _address_key(address: str) -> str:
    return _key("address", address)


@dataclass(frozen=True)
class Block:
    """Why a login attempt is refused, and for how long at most (seconds)."""

    message: str
    retry_after: int


def check(username: str, address: str) -> Block | None:
    """The block in force for this username and address, or None when the attempt may proceed."""
    window = _limit("LOGIN_FAILURE_WINDOW", LOGIN_FAILURE_WINDOW)
    minutes = max(1, window // 60)
    pair_limit = _limit("LOGIN_FAILURE_LIMIT", LOGIN_FAILURE_LIMIT)
    if int(cache.get(_pair_key(username, address), 0)) >= pair_limit:
        return Block(
            f"Too many failed logins for this username from your address ({pair_limit} in "
            f"{minutes} minutes). Wait up to {minutes} minutes and try again, or ask a lead to reset "
            "your password.",
            window,
        )
    address_limit = _limit("LOGIN_ADDRESS_FAILURE_LIMIT", ADDRESS_FAILURE_LIMIT)
    if int(cache.get(_address_key(address), 0)) >= address_limit:
        return Block(
            f"Too many failed logins from your address ({address_limit} in {minutes} minutes). "
            f"Wait up to {minutes} minutes and try again.",
            window,
        )
    return None


def _bump(key: str, window: int) -> int:
    # add() starts the window at the first failure; incr() keeps the key's expiry (Redis and locmem).
    cache.add(key, 0, timeout=window)
    try:
        return int(cache.incr(key))
    except ValueError:  # expired between add() and incr()
        cache.set(key, 1, timeout=window)
        return 1


def record_failure(username: str, address: str) -> int:
    """Count a failed login; returns the pair's failures in the current window."""
    window = _limit("LOGIN_FAILURE_WINDOW", LOGIN_FAILURE_WINDOW)
    _bump(_address_key(address), window)
    return _bump(_pair_key(username, address), window)


def record_success(username: str, address: str) -> None:
    """A successful login clears the pair's count (the address count keeps running)."""
    cache.delete(_pair_key(username, address))


def limit_login_attempts(view: View) -> View:
    """Wrap a login view (allauth's, whose field is ``login``: a username or an address; the admin's,
    ``username``): refuse a POST with 429 while a block is
    in force; count a POST that re-renders the form (200: wrong credentials) as a failure and one that
    redirects (success) as a success. GET passes through untouched. While the cache is unreachable
    (Redis down) attempts are neither limited nor counted (logged as a warning): people can still log in."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponseBase:
        if request.method != "POST":
            return view(request, *args, **kwargs)
        username = str(request.POST.get("login") or request.POST.get("username") or "")
        address = client_address(request)
        try:
            block = check(username, address)
        except Exception as exc:  # the cache (Redis) is down: logging in must not depend on it
            logger.warning("login rate limiting skipped, the cache is unavailable: %s", exc)
            return view(request, *args, **kwargs)
        if block is not None:
            return refused(request, block)
        response = view(request, *args, **kwargs)
        try:
            if response.status_code == 200:
                record_failure(username, address)
            elif 300 <= response.status_code < 400:
                record_success(username, address)
        except Exception as exc:
            logger.warning("a login attempt was not counted, the cache is unavailable: %s", exc)
        return response

    return wrapped


def refused(request: HttpRequest, block: Block) -> HttpResponse:
    """The 429 page: the login form again, with the reason, and a Retry-After header."""
    from django.shortcuts import render

    from .forms import LoginForm

    login = request.POST.get("login") or request.POST.get("username") or ""
    form = LoginForm(request=request, initial={"login": login})
    response = render(
        request,
        "account/login.html",
        {"form": form, "next": request.POST.get("next", ""), "rate_limited": block.message},
        status=429,
    )
    response["Retry-After"] = str(block.retry_after)
    return response
