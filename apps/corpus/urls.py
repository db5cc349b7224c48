from django.urls import path

from . import views

app_name = "corpus"
urlpatterns = [
    path("items/", views.item_list, name="item-list"),
    path("items/<int:pk>/", views.item_detail, name="item-detail"),
    path("items/<int:pk>/links/", views.item_link_add, name="item-link-add"),
    path("items/<int:pk>/links/<int:link_id>/remove/", views.item_link_remove, name="item-link-remove"),
    path("import/", views.import_page, name="import"),
    path("import/<int:pk>/", views.import_job, name="import-job"),
    path("import/<int:pk>/restart/", views.import_restart, name="import-restart"),
]
