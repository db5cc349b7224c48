from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "apps.corpus"
    label = "corpus"

    def ready(self) -> None:
        from celery.signals import worker_process_init
        from django.db.models.signals import post_migrate

        from apps.core.jobs import JobKind, register_kind

        from .models import ImportJob
        from .search import ensure_sqlite_fts
        from .services.render import start_render_pool
        from .tasks import run_import_task

        # A resent import reruns exactly (the upsert by canonical URL): nothing to clean up first.
        register_kind(JobKind("import", ImportJob, run_import_task, writes=True))
        # SQLite's full-text index lives outside the migrations (a table remake would drop its triggers).
        post_migrate.connect(ensure_sqlite_fts, sender=self, dispatch_uid="corpus-sqlite-fts")
        # The process that runs a worker's tasks starts its render pool with it, not with the first import.
        worker_process_init.connect(start_render_pool, dispatch_uid="corpus-render-pool")
