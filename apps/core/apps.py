from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "apps.core"
    label = "core"

    def ready(self) -> None:
        from celery.signals import worker_ready
        from django.core.signals import request_finished, request_started

        from . import generations
        from .jobs import requeue_on_worker_start

        # the tokens of cached values changed during a request are replaced after its response
        request_started.connect(generations.on_request_started, dispatch_uid="generations-request-started")
        request_finished.connect(generations.on_request_finished, dispatch_uid="generations-request-finished")

        # every worker that starts resends the stalled jobs of every kind (apps.core.jobs)
        worker_ready.connect(requeue_on_worker_start, dispatch_uid="apps.core.requeue_on_worker_start")
