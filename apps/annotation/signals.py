"""Signals the annotation app sends; adjudication listens (it may import annotation, not the reverse)."""

from django.dispatch import Signal

# Sent inside the submitting transaction with `annotation` (an Annotation) and `item_id`.
annotation_submitted = Signal()
