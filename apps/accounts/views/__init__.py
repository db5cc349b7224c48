"""The accounts pages, one module per screen: studies (the list, the profile, log out), a study's settings
(archive, delete), members (roles, removal, invitations) and the invitation a person opens from its link."""

from .invitations import invitation
from .members import invitation_create, invitation_revoke, member_remove, member_role, members
from .settings import archive_study, delete_study, study_settings
from .studies import LogoutView, profile, revoke_token, study_list

__all__ = [
    "LogoutView",
    "archive_study",
    "delete_study",
    "invitation",
    "invitation_create",
    "invitation_revoke",
    "member_remove",
    "member_role",
    "members",
    "profile",
    "revoke_token",
    "study_list",
    "study_settings",
]
