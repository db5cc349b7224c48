from django.contrib import admin

from .models import Decision, DecisionFinding, DecisionValue, Review


@admin.register(Decision)
class DecisionAdmin(admin.ModelAdmin[Decision]):
    list_display = ["id", "study", "item", "provenance", "decided_by", "decided_at", "is_current"]
    list_filter = ["provenance", "is_current"]
    raw_id_fields = ["item", "supersedes", "source_annotations"]


@admin.register(DecisionFinding)
class DecisionFindingAdmin(admin.ModelAdmin[DecisionFinding]):
    list_display = ["id", "decision", "number"]
    raw_id_fields = ["decision"]


@admin.register(DecisionValue)
class DecisionValueAdmin(admin.ModelAdmin[DecisionValue]):
    list_display = ["id", "finding", "dimension", "category"]
    raw_id_fields = ["finding", "category", "original_category"]


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin[Review]):
    list_display = ["item", "study", "state", "updated_at"]
    list_filter = ["state"]
    raw_id_fields = ["item"]
