from django.apps import AppConfig


class AgreementConfig(AppConfig):
    name = "apps.agreement"
    label = "agreement"

    def ready(self) -> None:
        from apps.annotation.signals import annotation_submitted
        from apps.core.jobs import JobKind, register_kind
        from apps.taxonomy.signals import codebook_changed

        from . import freshness
        from .models import AgreementSnapshot
        from .tasks import compute_agreement_task

        # A resent snapshot is computed again from the labels (it only reads): nothing to clean up.
        register_kind(JobKind("agreement", AgreementSnapshot, compute_agreement_task))

        annotation_submitted.connect(freshness.on_annotation_submitted, dispatch_uid="agreement-labels")
        codebook_changed.connect(freshness.on_codebook_changed, dispatch_uid="agreement-codebook")
