from django.urls import path

from . import views

app_name = "export"
urlpatterns = [
    path("export/", views.export_page, name="export"),
    path("export/preview/", views.export_preview, name="preview"),
    path("export/counts/", views.export_counts, name="counts"),
    path("export/start/", views.export_start, name="start"),
    path("export/stream.csv", views.export_stream, name="stream"),
    path("export/jobs/<int:pk>/", views.export_job, name="job"),
    path("export/jobs/<int:pk>/download/", views.export_download, name="download"),
]
