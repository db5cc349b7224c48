from django.contrib import admin

from apps.core.admin import ReadOnlyAdmin

from .models import Decision, DecisionFinding, DecisionValue, Review


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ["id", "study", "item", "provenance", "decided_by", "decided_at", "is_current"]
    list_filter = ["provenance", "is_current"]
    raw_id_fields = ["item", "supersedes", "source_annotations"]


@admin.register(DecisionFinding)
class DecisionFindingAdmin(ReadOnlyAdmin):
    list_display = ["id", "decision", "number"]
    raw_id_fields = ["decision"]


@admin.register(DecisionValue)
class DecisionValueAdmin(ReadOnlyAdmin):
    list_display = ["id", "finding", "dimension", "category"]
    raw_id_fields = ["finding", "category", "original_category"]


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin[Review]):
    list_display = ["item", "study", "state", "updated_at"]
    list_filter = ["state"]
    raw_id_fields = ["item"]
