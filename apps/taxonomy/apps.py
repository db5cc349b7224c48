from django.apps import AppConfig


class TaxonomyConfig(AppConfig):
    name = "apps.taxonomy"
    label = "taxonomy"
