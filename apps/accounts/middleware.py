"""Names the study of the request (its URL's `slug`) for the user's loading (`backends.REQUEST_STUDY`), and
whether the request writes (`backends.REQUEST_WRITES`) for the archived-study check of `access_study`; after
a writing request on a study, forgets the study's cached figures (`backends.REQUEST_WROTE`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse

from apps.core.generations import study_written

from .backends import REQUEST_STUDY, REQUEST_WRITES, REQUEST_WROTE

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class RequestStudyMiddleware:
    """Sets `REQUEST_STUDY` to the resolved view's `slug` argument before the view runs, and back to None
    when the request ends; `REQUEST_WRITES` to whether the request's method writes. Placed after
    AuthenticationMiddleware: the user is loaded lazily, by the view, so it is read with the membership
    of that study. Only the backend reads `REQUEST_STUDY`; only `access_study` reads `REQUEST_WRITES`.

    When the view of a writing request opened a study (`REQUEST_WROTE`, set by `access_study`), the study's
    cached figures are forgotten once the view has returned: its transactions have committed, and the
    response (often a redirect to the page that counts the change) has not left yet."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        REQUEST_STUDY.set(None)
        REQUEST_WRITES.set(request.method not in SAFE_METHODS)
        REQUEST_WROTE.set(None)
        try:
            response = self.get_response(request)
            wrote = REQUEST_WROTE.get()
            if wrote is not None:
                study_written(wrote)
            return response
        finally:
            REQUEST_STUDY.set(None)
            REQUEST_WRITES.set(False)
            REQUEST_WROTE.set(None)

    def process_view(
        self, request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: dict[str, Any]
    ) -> None:
        slug = kwargs.get("slug")
        REQUEST_STUDY.set(slug if isinstance(slug, str) else None)
