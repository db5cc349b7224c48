from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "apps.corpus"
    label = "corpus"

    def ready(self) -> None:
        from apps.core.jobs import JobKind, register_kind

        from .models import ImportJob
        from .tasks import run_import_task

        # A resent import reruns exactly (the upsert by canonical URL): nothing to clean up first.
        register_kind(JobKind("import", ImportJob, run_import_task))
