from django.urls import path

from . import gold, my_work, views

app_name = "quality"
urlpatterns = [
    path("quality/", views.quality_page, name="quality"),
    path("quality/report.csv", views.quality_csv, name="csv"),
    path("quality/gold/", gold.gold_items, name="gold-items"),
    path("quality/gold/seed/", gold.seed, name="gold-seed"),
    path("quality/training/", gold.training, name="training"),
    path("my-work/", my_work.my_work, name="my-work"),
]
