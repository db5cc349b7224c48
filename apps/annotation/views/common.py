"""What the annotation pages share."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Concatenate

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from apps.accounts.models import Study, User
from apps.accounts.permissions import access_study
from apps.core.http import HtmxHttpRequest
from apps.taxonomy import guidelines


def request_user(request: HtmxHttpRequest) -> User:
    assert isinstance(request.user, User)  # @login_required ran first
    return request.user


def guidelines_first(request: HtmxHttpRequest, study: Study, role: str) -> HttpResponse | None:
    """A redirect to the guidelines page when the user must acknowledge them before labelling
    (`taxonomy.guidelines.to_read`), else None: the queue and the workbench call it first."""
    version = guidelines.to_read(study, request_user(request), role)
    if version is None:
        return None
    messages.info(request, guidelines.refusal(study, version))
    return redirect("annotation:guidelines", slug=study.slug)


#: A labelling page as written: the request, the study and the member's role, then the URL's other arguments.
type StudyView[**P] = Callable[Concatenate[HtmxHttpRequest, Study, str, P], HttpResponse]
#: As Django calls it: the request and the URL's arguments by name.
type Page = Callable[..., HttpResponse]


def labelling_page[**P](method: str) -> Callable[[StudyView[P]], Page]:
    """A page of the queue or the workbench, in the order the permission matrix holds: signed in first (else
    the sign-in page), then the one HTTP `method` it answers (else 405), then the study of the URL's `slug`
    as `access_study` gives it to the member (a 404 to anyone else), and the guidelines first when they
    must read them (`guidelines_first`). The view gets the study and the member's role in place of the
    slug; Django calls the page with the URL's arguments by name."""

    def decorate(view: StudyView[P]) -> Page:
        def page(request: HtmxHttpRequest, slug: str, *args: P.args, **kwargs: P.kwargs) -> HttpResponse:
            study, role = access_study(request.user, slug)
            if (first := guidelines_first(request, study, role)) is not None:
                return first
            return view(request, study, role, *args, **kwargs)

        functools.update_wrapper(page, view)
        return login_required(require_http_methods([method])(page))

    return decorate
