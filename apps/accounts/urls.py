from allauth.account.views import LoginView
from django.urls import path

from . import views
from .ratelimit import limit_login_attempts

# allauth's login view (a username or an e-mail address), behind our rate limit. config/urls.py serves it
# at allauth's own address too, so no login form escapes the limit.
login = limit_login_attempts(LoginView.as_view())

app_name = "accounts"
urlpatterns = [
    path("login/", login, name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("", views.study_list, name="study-list"),
    path("profile/", views.profile, name="profile"),
    path("profile/tokens/<int:pk>/revoke/", views.revoke_token, name="revoke-token"),
    path("invite/<str:token>/", views.invitation, name="invitation"),
    path("studies/<slug:slug>/members/", views.members, name="members"),
    path("studies/<slug:slug>/settings/", views.study_settings, name="settings"),
    path("studies/<slug:slug>/settings/archive/", views.archive_study, name="archive"),
    path("studies/<slug:slug>/settings/delete/", views.delete_study, name="delete"),
    path("studies/<slug:slug>/members/<int:pk>/role/", views.member_role, name="member-role"),
    path("studies/<slug:slug>/members/<int:pk>/remove/", views.member_remove, name="member-remove"),
    path("studies/<slug:slug>/invitations/", views.invitation_create, name="invitation-create"),
    path(
        "studies/<slug:slug>/invitations/<int:pk>/revoke/", views.invitation_revoke, name="invitation-revoke"
    ),
]
