"""The writes of adjudication: consolidate an item, decide it, follow codebook merges, import gold labels.

One module per concern: `consolidate` (an item's Review and automatic decision follow its annotations),
`decide` (the lead's decision and claim), `codebook` (following merges and splits), `imports` (gold labels
from a file), `send_back` (outdated labels back to their annotators); `record` holds the writes they share
(a new current decision, a Review's state), `errors` what a refused decision says, and `sql` every
hand-written statement. Callers import from this package.

Locking contract. Every write on one item's consolidation state runs in one transaction that first locks
the item's row (`consolidate_item`, `import_decisions`) or its Review row (`decide`, `claim`), then reads
the annotations and the current decision. Two annotators submitting the last two annotations of an item at
once are therefore serialised (the second sees the first's annotation and consolidates), and two leads
deciding one item at once are serialised too: the second sees a current decision other than the one it
started from and gets a `DecisionConflict`. The partial unique constraint ``decision_one_current`` is the
last guard: an insert that would make a second current decision raises IntegrityError, reported as the
same conflict. No path overwrites a decision: a new one supersedes it, and the old one stays, not current.
"""

from .codebook import follow_merge, follow_split
from .consolidate import consolidate_item, consolidate_items, consolidate_submission
from .decide import claim, decide, gold_from_keys
from .errors import AdjudicationError, DecisionConflict
from .imports import ImportedDecisions, import_decisions
from .record import AUTOMATIC, Gold
from .send_back import send_back

__all__ = [
    "AUTOMATIC",
    "AdjudicationError",
    "DecisionConflict",
    "Gold",
    "ImportedDecisions",
    "claim",
    "consolidate_item",
    "consolidate_items",
    "consolidate_submission",
    "decide",
    "follow_merge",
    "follow_split",
    "gold_from_keys",
    "import_decisions",
    "send_back",
]
