from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"

    def ready(self) -> None:
        from celery.signals import worker_ready

        from .jobs import requeue_on_worker_start

        # every worker that starts resends the stalled jobs of every kind (apps.core.jobs)
        worker_ready.connect(requeue_on_worker_start, dispatch_uid="apps.core.requeue_on_worker_start")
