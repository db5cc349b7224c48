"""The codebook screens: the codebook (an editor for leads, read-only with definitions for annotators),
the category panel and its actions, split and reassign, proposals, history, downloads and file loading.

Every view loads through `access_study` (404 for non-members, 403 for annotators on lead screens) and
fetches categories and dimensions scoped to the study. htmx requests get the named partial; plain requests
get the page (and, after a POST, a redirect with a message). Form errors: the form is re-rendered with
status 422 (static/js/taxonomy.js lets htmx swap 422 responses). A successful change sends the client
event ``codebook-changed``, on which the trees region refreshes itself.
"""

from .codebook import codebook, export, load, trees
from .editor import (
    category_add,
    category_delete,
    category_detail,
    category_merge,
    category_move,
    category_reorder,
    category_restore,
    category_retire,
    dimension_action,
    dimension_add,
    dimension_detail,
)
from .history import history, version_detail, version_export
from .labels import category_reassign, category_split
from .proposals import proposal_action, proposals, propose

__all__ = [
    "category_add",
    "category_delete",
    "category_detail",
    "category_merge",
    "category_move",
    "category_reassign",
    "category_reorder",
    "category_restore",
    "category_retire",
    "category_split",
    "codebook",
    "dimension_action",
    "dimension_add",
    "dimension_detail",
    "export",
    "history",
    "load",
    "proposal_action",
    "proposals",
    "propose",
    "trees",
    "version_detail",
    "version_export",
]
