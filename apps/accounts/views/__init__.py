"""The accounts pages, one module per screen: studies (the list, the profile, log out), members (roles,
removal, invitations) and the invitation a person opens from its link."""

from .invitations import invitation
from .members import invitation_create, invitation_revoke, member_remove, member_role, members
from .studies import LogoutView, profile, revoke_token, study_list

__all__ = [
    "LogoutView",
    "invitation",
    "invitation_create",
    "invitation_revoke",
    "member_remove",
    "member_role",
    "members",
    "profile",
    "revoke_token",
    "study_list",
]
