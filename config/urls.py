from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", include("config.api_urls")),
    path("", include("apps.accounts.urls")),
    path("studies/<slug:slug>/", include("apps.corpus.urls")),
    path("studies/<slug:slug>/", include("apps.taxonomy.urls")),
    path("studies/<slug:slug>/", include("apps.annotation.urls")),
    path("studies/<slug:slug>/", include("apps.agreement.urls")),
    path("studies/<slug:slug>/", include("apps.adjudication.urls")),
    path("studies/<slug:slug>/", include("apps.export.urls")),
]
