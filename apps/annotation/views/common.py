"""What the annotation pages share."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect

from apps.accounts.models import Study, User
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
