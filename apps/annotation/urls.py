from django.urls import path

from . import views

app_name = "annotation"
urlpatterns = [
    path("queue/", views.queue, name="queue"),
    path("rounds/", views.rounds, name="rounds"),
]
