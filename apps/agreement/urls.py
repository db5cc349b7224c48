from django.urls import path

from . import downloads, views

app_name = "agreement"
urlpatterns = [
    path("agreement/", views.dashboard, name="dashboard"),
    path("agreement/compute/", views.compute, name="compute"),
    path("agreement/check/", views.dashboard_check, name="check"),
    path("agreement/models/", views.models_comparison, name="models"),
    path("agreement/jobs/<int:pk>/progress/", views.progress, name="progress"),
    path("agreement/items/", views.cell_items, name="cell-items"),
    path("agreement/tables/<str:name>.<str:fmt>", downloads.table, name="table"),
]
