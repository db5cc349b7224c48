from django.urls import path

from . import views

app_name = "adjudication"
urlpatterns = [
    path("", views.study_detail, name="study-detail"),
]
urlpatterns += [
    path("disagreements/", views.queue, name="queue"),
]
