from django.urls import path

from . import views

app_name = "annotation"
urlpatterns = [
    path("queue/", views.queue, name="queue"),
    path("guidelines/", views.guidelines_page, name="guidelines"),
    path("guidelines/acknowledge/", views.acknowledge, name="guidelines-acknowledge"),
    path("guidelines/<int:number>/", views.guidelines_version, name="guidelines-version"),
    path("decided/", views.my_decided, name="decided"),
    path("inbox/", views.inbox, name="inbox"),
    path("rounds/<int:number>/items/<int:item_id>/thread/", views.thread, name="thread"),
    path("rounds/<int:number>/items/<int:item_id>/cause/", views.cause, name="cause"),
    path("causes/", views.causes, name="causes"),
    path("comments/<int:pk>/", views.comment, name="comment"),
    path("label/next/", views.next_item, name="next"),
    path("label/<int:pk>/", views.workbench, name="workbench"),
    path("label/<int:pk>/draft/", views.save_draft, name="draft"),
    path("label/<int:pk>/submit/", views.submit, name="submit"),
    path("label/<int:pk>/revise/", views.revise, name="revise"),
    path("rounds/", views.rounds, name="rounds"),
    path("rounds/draw/", views.draw, name="draw"),
    path("rounds/assign/", views.assign, name="assign"),
    path("rounds/add/", views.add_items, name="add-items"),
    path("rounds/add-from-grid/", views.add_from_grid, name="add-from-grid"),
    path("rounds/<int:number>/", views.round_detail, name="round-detail"),
    path("rounds/<int:number>/reassign/<int:pk>/", views.reassign, name="reassign"),
    path("rounds/<int:number>/reveal/", views.reveal, name="reveal"),
    path("rounds/<int:number>/kind/", views.round_kind, name="round-kind"),
    path("rounds/<int:number>/pass-mark/", views.round_pass_mark, name="round-pass-mark"),
    path("rounds/<int:number>/close-discussion/", views.close_discussion, name="close-discussion"),
    path("rounds/<int:number>/discussion/", views.round_discussion, name="discussion"),
    path("screening/", views.screening, name="screening"),
    path("screening/<int:pk>/", views.screen, name="screen"),
]
