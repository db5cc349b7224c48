"""Request typing for htmx views."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    """What views receive: Django's request plus django-htmx's `request.htmx`."""

    htmx: HtmxDetails
