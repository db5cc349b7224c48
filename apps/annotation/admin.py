from django.contrib import admin

from .models import Annotation, Assignment, Finding, LabelValue, Round, RoundItem


@admin.register(Round)
class RoundAdmin(admin.ModelAdmin[Round]):
    list_display = ["study", "number", "name", "method", "seed", "requested_size"]


@admin.register(RoundItem)
class RoundItemAdmin(admin.ModelAdmin[RoundItem]):
    list_display = ["round", "item", "position"]
    raw_id_fields = ["item"]


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin[Assignment]):
    list_display = ["id", "study", "round", "item", "annotator", "status"]
    list_filter = ["status"]
    raw_id_fields = ["item"]


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin[Annotation]):
    list_display = ["id", "assignment", "submitted_at", "codebook_version"]
    raw_id_fields = ["assignment"]


@admin.register(Finding)
class FindingAdmin(admin.ModelAdmin[Finding]):
    list_display = ["id", "annotation", "number"]
    raw_id_fields = ["annotation"]


@admin.register(LabelValue)
class LabelValueAdmin(admin.ModelAdmin[LabelValue]):
    list_display = ["id", "finding", "dimension", "category", "pending"]
    raw_id_fields = ["finding", "category", "original_category"]
