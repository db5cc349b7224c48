from django.contrib import admin

from apps.core.admin import ReadOnlyAdmin

from .models import Category, Codebook, CodebookChange, CodebookVersion, Dimension


@admin.register(Codebook)
class CodebookAdmin(ReadOnlyAdmin):
    list_display = ["study", "name", "version"]


@admin.register(Dimension)
class DimensionAdmin(ReadOnlyAdmin):
    list_display = ["codebook", "key", "name", "multiple", "position"]


@admin.register(Category)
class CategoryAdmin(ReadOnlyAdmin):
    list_display = ["dimension", "key", "name", "parent", "status"]
    list_filter = ["status"]
    search_fields = ["key", "name"]
    raw_id_fields = ["parent", "merged_into", "proposed_by"]


@admin.register(CodebookChange)
class CodebookChangeAdmin(ReadOnlyAdmin):
    list_display = ["codebook", "version", "kind", "actor", "at"]
    list_filter = ["kind"]


@admin.register(CodebookVersion)
class CodebookVersionAdmin(ReadOnlyAdmin):
    list_display = ["codebook", "number", "created_at"]
