"""Signals the codebook sends when labels must follow a change.

Receivers run synchronously inside the codebook change's transaction, so a merge either moves every
label (annotations and gold decisions alike) or nothing.
"""

from django.dispatch import Signal

# `source` and `target` are Category instances; every label on `source` must now point to `target`.
categories_merged = Signal()
# `mapping` is {label_value_id: new_category_id} for annotation labels of a split `source`.
labels_reassigned = Signal()
# Sent after any change with `codebook` and `version`.
codebook_changed = Signal()
