from django.contrib import admin

from .models import ExportJob


@admin.register(ExportJob)
class ExportJobAdmin(admin.ModelAdmin[ExportJob]):
    list_display = ["id", "study", "format", "status", "row_count", "created_at"]
    list_filter = ["format", "status"]
