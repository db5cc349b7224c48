from django.apps import AppConfig


class ExportConfig(AppConfig):
    name = "apps.export"
    label = "export"

    def ready(self) -> None:
        from apps.accounts.models import Study
        from apps.accounts.services import study_deleting
        from apps.core.jobs import JobKind, register_kind

        from .deletion import purge_study
        from .models import ExportJob
        from .services import discard_scratch
        from .tasks import export_dataset_task

        register_kind(JobKind("export", ExportJob, export_dataset_task, discard=discard_scratch))
        study_deleting.connect(purge_study, sender=Study, dispatch_uid="export.purge_study")
