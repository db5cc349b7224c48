from django.apps import AppConfig


class AdjudicationConfig(AppConfig):
    name = "apps.adjudication"
    label = "adjudication"
