"""The one /api/v1/ router. Each app contributes its routes from its own api.py."""

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView

from apps.accounts.api_docs import ApiDocs
from apps.core.api import api_not_found

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", ApiDocs.as_view(), name="api-docs"),
    path("", include("apps.accounts.api")),
    path("", include("apps.corpus.api")),
    path("", include("apps.taxonomy.api")),
    path("", include("apps.annotation.api")),
    path("", include("apps.agreement.api")),
    path("", include("apps.adjudication.api")),
    path("", include("apps.export.api")),
    re_path(r"^(?P<rest>[\s\S]*)$", api_not_found, name="api-not-found"),  # any path, newlines too
]
