from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "apps.annotation"
    label = "annotation"

    def ready(self) -> None:
        from apps.accounts.signals import member_removed
        from apps.taxonomy import label_stores

        from .label_store import STORE
        from .receivers import on_member_removed

        label_stores.register(label_stores.LABELS, STORE)
        member_removed.connect(on_member_removed, dispatch_uid="annotation-member-removed")
