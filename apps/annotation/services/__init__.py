"""Annotation workflows: rounds (sample, add, screen), assignment, drafts, submission, label import.

Each write runs in one `transaction.atomic`. Locking contracts:

* `draw_round`, `add_items_to_round`, `assign_round` and `import_annotations` lock the study row
  (``select_for_update``), so two leads drawing or assigning at once are serialised and cannot put one
  item in two samples or give it twice to one annotator;
* `submit_annotation`, `save_draft` and `reassign` lock the assignment row; with the one-to-one
  constraint between assignment and annotation, two clicks or two tabs store one annotation.

`annotation_submitted` is sent inside the submitting transaction: the adjudication app's receivers
run in it, so a failing receiver rolls the submission back. This module never imports adjudication;
whether an item is decided is adjudication's fact, read through the reader it provides (`decided.py`).
"""

from .common import (
    AlreadyDecided,
    AnnotationError,
    ImportLabelsError,
    InvalidLabels,
    LoadedCodebook,
    NotYourAssignment,
    RoundError,
    StaleCodebook,
    decided_item_ids,
    final_reason,
    load_codebook,
    stored_labels,
)
from .discussion import (
    NotInDiscussion,
    OpenAssignments,
    RevealResult,
    ReviseResult,
    check_revisable,
    close_discussion,
    open_assignment_count,
    reveal_round,
    revise_annotation,
)
from .imports import ImportLabelsResult, import_annotations
from .labelling import SubmitResult, check_draft_size, next_open_assignment, save_draft, submit_annotation
from .rounds import (
    AddResult,
    AssignResult,
    SampleResult,
    add_items_to_round,
    assign_round,
    draw_round,
    eligible_items,
    matching_items,
    reassign,
    round_loads,
    round_progress,
    rounds_overview,
    screen_items,
    set_round_kind,
    study_members,
)

__all__ = [
    "AddResult",
    "AlreadyDecided",
    "AnnotationError",
    "AssignResult",
    "ImportLabelsError",
    "ImportLabelsResult",
    "InvalidLabels",
    "LoadedCodebook",
    "NotInDiscussion",
    "NotYourAssignment",
    "OpenAssignments",
    "RevealResult",
    "ReviseResult",
    "RoundError",
    "SampleResult",
    "StaleCodebook",
    "SubmitResult",
    "add_items_to_round",
    "assign_round",
    "check_draft_size",
    "check_revisable",
    "close_discussion",
    "decided_item_ids",
    "draw_round",
    "eligible_items",
    "final_reason",
    "import_annotations",
    "load_codebook",
    "matching_items",
    "next_open_assignment",
    "open_assignment_count",
    "reassign",
    "reveal_round",
    "revise_annotation",
    "round_loads",
    "round_progress",
    "rounds_overview",
    "save_draft",
    "screen_items",
    "set_round_kind",
    "stored_labels",
    "study_members",
    "submit_annotation",
]
