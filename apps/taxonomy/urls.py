from django.urls import path

from . import views

app_name = "taxonomy"
urlpatterns = [
    path("codebook/", views.codebook, name="codebook"),
]
