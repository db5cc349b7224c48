from django.urls import path

from . import views

app_name = "quality"
urlpatterns = [
    path("quality/", views.quality_page, name="quality"),
    path("quality/report.csv", views.quality_csv, name="csv"),
]
