from django.urls import path

from . import views

app_name = "adjudication"
urlpatterns = [
    path("", views.study_detail, name="study-detail"),
    path("disagreements/", views.queue, name="queue"),
    path("disagreements/<int:item_id>/", views.resolve, name="resolve"),
    path("disagreements/<int:item_id>/claim/", views.claim_item, name="claim"),
    path("decisions/<int:item_id>/", views.item_history, name="history"),
]
