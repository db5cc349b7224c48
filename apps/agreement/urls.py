from django.urls import path

from . import views

app_name = "agreement"
urlpatterns = [
    path("agreement/", views.dashboard, name="dashboard"),
]
