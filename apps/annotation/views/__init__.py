"""The annotator's queue and workbench, and the lead's rounds and screening pages."""

from .causes import causes
from .discussion import close_discussion, my_decided, reveal, revise, round_discussion
from .grid import add_from_grid
from .guidelines import acknowledge, guidelines_page, guidelines_version
from .queue import next_item, queue
from .rounds import (
    add_items,
    assign,
    draw,
    reassign,
    round_detail,
    round_kind,
    round_pass_mark,
    rounds,
    screen,
    screening,
)
from .threads import cause, comment, inbox, thread
from .workbench import save_draft, submit, workbench

__all__ = [
    "acknowledge",
    "add_from_grid",
    "add_items",
    "assign",
    "cause",
    "causes",
    "close_discussion",
    "comment",
    "draw",
    "guidelines_page",
    "guidelines_version",
    "inbox",
    "my_decided",
    "next_item",
    "queue",
    "reassign",
    "reveal",
    "revise",
    "round_detail",
    "round_discussion",
    "round_kind",
    "round_pass_mark",
    "rounds",
    "save_draft",
    "screen",
    "screening",
    "submit",
    "thread",
    "workbench",
]
