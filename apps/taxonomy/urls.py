from django.urls import path

from . import views

app_name = "taxonomy"
urlpatterns = [
    path("codebook/", views.codebook, name="codebook"),
    path("codebook/trees/", views.trees, name="trees"),
    path("codebook/export/<str:fmt>/", views.export, name="export"),
    path("codebook/load/", views.load, name="load"),
    path("codebook/history/", views.history, name="history"),
    path("codebook/history/<int:version>/", views.version_detail, name="version"),
    path("codebook/history/<int:version>/export/<str:fmt>/", views.version_export, name="version-export"),
    path("codebook/propose/", views.propose, name="propose"),
    path("codebook/proposals/", views.proposals, name="proposals"),
    path("codebook/proposals/<int:pk>/<str:action>/", views.proposal_action, name="proposal-action"),
    path("codebook/dimensions/add/", views.dimension_add, name="dimension-add"),
    path("codebook/dimensions/<int:pk>/", views.dimension_detail, name="dimension"),
    path("codebook/dimensions/<int:pk>/categories/add/", views.category_add, name="category-add"),
    path("codebook/dimensions/<int:pk>/<str:action>/", views.dimension_action, name="dimension-action"),
    path("codebook/categories/<int:pk>/", views.category_detail, name="category"),
    path("codebook/categories/<int:pk>/move/", views.category_move, name="category-move"),
    path("codebook/categories/<int:pk>/reorder/", views.category_reorder, name="category-reorder"),
    path("codebook/categories/<int:pk>/merge/", views.category_merge, name="category-merge"),
    path("codebook/categories/<int:pk>/split/", views.category_split, name="category-split"),
    path("codebook/categories/<int:pk>/reassign/", views.category_reassign, name="category-reassign"),
    path("codebook/categories/<int:pk>/retire/", views.category_retire, name="category-retire"),
    path("codebook/categories/<int:pk>/restore/", views.category_restore, name="category-restore"),
    path("codebook/categories/<int:pk>/delete/", views.category_delete, name="category-delete"),
]
