from django.urls import path

from . import grid_views, views

app_name = "corpus"
urlpatterns = [
    path("items/", grid_views.item_list, name="item-list"),
    path("items/bulk/", grid_views.items_bulk, name="items-bulk"),
    path("items/views/", grid_views.saved_view_save, name="saved-view-save"),
    path("items/views/<int:pk>/delete/", grid_views.saved_view_delete, name="saved-view-delete"),
    path("items/screen/", grid_views.screen_page, name="screen"),
    path("items/screen/<int:pk>/", grid_views.screen_item, name="screen-item"),
    path("items/<int:pk>/", views.item_detail, name="item-detail"),
    path("items/<int:pk>/links/", views.item_link_add, name="item-link-add"),
    path("items/<int:pk>/links/<int:link_id>/remove/", views.item_link_remove, name="item-link-remove"),
    path("import/", views.import_page, name="import"),
    path("import/<int:pk>/", views.import_job, name="import-job"),
    path("import/<int:pk>/restart/", views.import_restart, name="import-restart"),
]
