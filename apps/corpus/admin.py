from django.contrib import admin

from .models import ImportJob, Item, ItemComment


class CommentInline(admin.TabularInline[ItemComment, Item]):
    model = ItemComment
    extra = 0
    fields = ["position", "author", "is_answer", "is_accepted", "score"]


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin[Item]):
    list_display = ["id", "study", "source", "title", "relevance"]
    list_filter = ["source", "relevance"]
    search_fields = ["url", "title"]
    raw_id_fields = ["study", "screened_by"]
    inlines = [CommentInline]


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin[ImportJob]):
    list_display = ["id", "study", "kind", "status", "created", "updated", "failed", "created_at"]
    list_filter = ["kind", "status"]
