from django.contrib import admin

from .models import AgreementSnapshot


@admin.register(AgreementSnapshot)
class AgreementSnapshotAdmin(admin.ModelAdmin[AgreementSnapshot]):
    list_display = ["id", "study", "round", "dimension", "level", "codebook_version", "status", "created_at"]
    list_filter = ["status"]
