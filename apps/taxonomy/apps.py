from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class TaxonomyConfig(AppConfig):
    name = "apps.taxonomy"
    label = "taxonomy"

    def ready(self) -> None:
        from .index import note_codebook_write
        from .models import Category, Codebook, Dimension

        for model in (Codebook, Dimension, Category):
            post_save.connect(
                note_codebook_write, sender=model, dispatch_uid=f"codebook-index-{model.__name__}-save"
            )
            post_delete.connect(
                note_codebook_write, sender=model, dispatch_uid=f"codebook-index-{model.__name__}-del"
            )
