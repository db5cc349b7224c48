from django.apps import AppConfig


class RatersConfig(AppConfig):
    name = "apps.raters"
    label = "raters"
    verbose_name = "Model raters"

    def ready(self) -> None:
        from apps.annotation import suggestions as port
        from apps.core.jobs import JobKind, register_kind

        from .models import ModelRun
        from .suggestions import suggestion
        from .tasks import run_model_task

        port.provide(suggestion)  # the workbench's suggestions, behind the port's gate

        # A resent run resumes: what it stored is kept and not asked again (nothing to clean up).
        register_kind(JobKind("model_run", ModelRun, run_model_task, writes=True))
