from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "apps.corpus"
    label = "corpus"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from apps.core.jobs import JobKind, register_kind

        from .models import ImportJob
        from .search import ensure_sqlite_fts
        from .tasks import run_import_task

        # A resent import reruns exactly (the upsert by canonical URL): nothing to clean up first.
        register_kind(JobKind("import", ImportJob, run_import_task, writes=True))
        # SQLite's full-text index lives outside the migrations (a table remake would drop its triggers).
        post_migrate.connect(ensure_sqlite_fts, sender=self, dispatch_uid="corpus-sqlite-fts")
