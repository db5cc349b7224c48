from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView

from apps.accounts.api_docs import ApiDocs
from apps.accounts.ratelimit import limit_login_attempts
from apps.accounts.urls import login

urlpatterns = [
    path("admin/login/", limit_login_attempts(admin.site.login), name="admin-login-limited"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("config.api_urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema-root"),
    path("api/docs/", ApiDocs.as_view(), name="api-docs-root"),
    path("", include("apps.accounts.urls")),
    # Account pages (django-allauth): password change and reset, e-mail addresses, sign-up when open. Its
    # login address is served by our rate-limited view first (the same as /login/).
    path("accounts/login/", login, name="account_login"),
    path("accounts/", include("allauth.urls")),
    path("studies/<slug:slug>/", include("apps.corpus.urls")),
    path("studies/<slug:slug>/", include("apps.taxonomy.urls")),
    path("studies/<slug:slug>/", include("apps.annotation.urls")),
    path("studies/<slug:slug>/", include("apps.raters.urls")),
    path("studies/<slug:slug>/", include("apps.agreement.urls")),
    path("studies/<slug:slug>/", include("apps.adjudication.urls")),
    path("studies/<slug:slug>/", include("apps.quality.urls")),
    path("studies/<slug:slug>/", include("apps.export.urls")),
]
