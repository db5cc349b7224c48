from django.urls import path

from . import views

app_name = "raters"
urlpatterns = [
    path("models/", views.models_page, name="models"),
    path("models/add/", views.rater_add, name="rater-add"),
    path("models/<int:pk>/run/", views.run_start, name="run-start"),
    path("models/runs/<int:pk>/", views.run_detail, name="run"),
    path("models/runs/<int:pk>/cancel/", views.run_cancel, name="run-cancel"),
    path("models/suggestions/<int:number>/", views.suggestions_switch, name="suggestions"),
]
