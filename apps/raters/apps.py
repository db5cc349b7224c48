from django.apps import AppConfig


class RatersConfig(AppConfig):
    name = "apps.raters"
    label = "raters"
    verbose_name = "Model raters"
