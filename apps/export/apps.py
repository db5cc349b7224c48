from django.apps import AppConfig


class ExportConfig(AppConfig):
    name = "apps.export"
    label = "export"

    def ready(self) -> None:
        from apps.core.jobs import JobKind, register_kind

        from .models import ExportJob
        from .services import discard_scratch
        from .tasks import export_dataset_task

        register_kind(JobKind("export", ExportJob, export_dataset_task, discard=discard_scratch))
