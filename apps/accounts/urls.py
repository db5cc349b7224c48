from django.contrib.auth import views as auth_views
from django.urls import path

from . import views
from .ratelimit import limit_login_attempts

app_name = "accounts"
urlpatterns = [
    path(
        "login/",
        limit_login_attempts(auth_views.LoginView.as_view(template_name="accounts/login.html")),
        name="login",
    ),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("", views.study_list, name="study-list"),
    path("profile/", views.profile, name="profile"),
    path("profile/tokens/<int:pk>/revoke/", views.revoke_token, name="revoke-token"),
    path("studies/<slug:slug>/members/", views.members, name="members"),
    path("studies/<slug:slug>/settings/", views.study_settings, name="settings"),
    path("studies/<slug:slug>/settings/archive/", views.archive_study, name="archive"),
    path("studies/<slug:slug>/settings/delete/", views.delete_study, name="delete"),
]
