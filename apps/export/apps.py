from django.apps import AppConfig


class ExportConfig(AppConfig):
    name = "apps.export"
    label = "export"
