from django.urls import path

from . import views

app_name = "export"
urlpatterns = [
    path("export/", views.export_page, name="export"),
]
