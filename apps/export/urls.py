from django.urls import path

from . import views
from .paper import views as paper

app_name = "export"
urlpatterns = [
    path("export/", views.export_page, name="export"),
    path("export/preview/", views.export_preview, name="preview"),
    path("export/counts/", views.export_counts, name="counts"),
    path("export/start/", views.export_start, name="start"),
    path("export/stream.csv", views.export_stream, name="stream"),
    path("export/jobs/<int:pk>/", views.export_job, name="job"),
    path("export/jobs/<int:pk>/download/", views.export_download, name="download"),
    path("paper/", paper.paper_page, name="paper"),
    path("paper/figures/<str:name>.<str:fmt>", paper.paper_figure, name="paper-figure"),
    path("paper/crosstab.<str:fmt>", paper.paper_crosstab, name="paper-crosstab"),
    path("paper/methods/", paper.paper_methods, name="paper-methods"),
    path("paper/rereview/<int:item_id>/", paper.paper_still_right, name="paper-still-right"),
    path("paper/rereview/<int:item_id>/send-back/", paper.paper_send_back, name="paper-send-back"),
    path("paper/methods.<str:fmt>", paper.paper_methods_file, name="paper-methods-file"),
]
