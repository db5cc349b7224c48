from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from .models import ApiToken, Membership, Study, User

admin.site.register(User, UserAdmin)


class MembershipInline(admin.TabularInline[Membership, Study]):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin[Study]):
    list_display = ["slug", "name", "overlap", "consolidation_rule", "is_demo", "created_at"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin[Membership]):
    list_display = ["study", "user", "role"]
    list_filter = ["role"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    list_display = ["user", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["key_hash", "prefix"]
