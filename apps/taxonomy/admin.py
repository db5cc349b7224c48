from django.contrib import admin

from .models import Category, Codebook, CodebookChange, CodebookVersion, Dimension


@admin.register(Codebook)
class CodebookAdmin(admin.ModelAdmin[Codebook]):
    list_display = ["study", "name", "version"]


@admin.register(Dimension)
class DimensionAdmin(admin.ModelAdmin[Dimension]):
    list_display = ["codebook", "key", "name", "multiple", "position"]


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin[Category]):
    list_display = ["dimension", "key", "name", "parent", "status"]
    list_filter = ["status"]
    search_fields = ["key", "name"]
    raw_id_fields = ["parent", "merged_into", "proposed_by"]


@admin.register(CodebookChange)
class CodebookChangeAdmin(admin.ModelAdmin[CodebookChange]):
    list_display = ["codebook", "version", "kind", "actor", "at"]
    list_filter = ["kind"]


@admin.register(CodebookVersion)
class CodebookVersionAdmin(admin.ModelAdmin[CodebookVersion]):
    list_display = ["codebook", "number", "created_at"]
