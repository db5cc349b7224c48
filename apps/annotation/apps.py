from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "apps.annotation"
    label = "annotation"

    def ready(self) -> None:
        from apps.taxonomy import label_stores

        from .label_store import STORE

        label_stores.register(label_stores.LABELS, STORE)
