"""Signals the annotation app sends; adjudication listens (it may import annotation, not the reverse)."""

from django.dispatch import Signal

# Sent inside the submitting transaction with `annotation` (an Annotation) and `item_id`; a sender that
# holds the study's codebook (share-locked, so current) may add it as `index` (a CodebookIndex) to spare
# receivers reading it again.
annotation_submitted = Signal()

# Sent inside the writing transaction with `item_ids` (a list of ints) when the rounds or assignments of
# these items changed (a round drawn or extended, a round assigned, labels imported): adjudication keeps
# the items grid's labelling columns (`apps.adjudication.progress`).
items_moved = Signal()
