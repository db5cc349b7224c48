from django.apps import AppConfig


class AgreementConfig(AppConfig):
    name = "apps.agreement"
    label = "agreement"
