"""Every change to a codebook: add, rename, edit, move, reorder, merge, split, reassign, retire, restore,
delete (unused only), proposals (propose, accept, reject) and dimensions. Loading files lives in
`apps.taxonomy.loading`, reading the codebook in `apps.taxonomy.index`.

Contract of every operation that changes the shared codebook (docs/design.md §2 end):

* it runs in one `transaction.atomic` holding ``select_for_update`` on the `Codebook` row, so two leads
  editing at once are serialised and each sees the other's result; objects passed in are re-read under
  the lock;
* it records one `CodebookChange` per affected category or dimension (who, when, before, after), raises
  `Codebook.version` by exactly one and stores a `CodebookVersion` snapshot (the §5 data of the active
  codebook at that version), after checking that the snapshot is a valid codebook file;
* it sends `signals.codebook_changed` (and `categories_merged` / `labels_reassigned` when labels move)
  inside the transaction, so receivers' writes commit or roll back with it;
* a refused change raises `CodebookEditError` with a message for people, and writes nothing.

An operation that finds nothing to change records nothing and keeps the version. A proposal by an
annotator is recorded (kind ``propose``) without raising the version: the shared codebook is unchanged
until a lead accepts it. Taxonomy never imports annotation or adjudication: labels are moved through
``apps.get_model("annotation", "LabelValue")`` / ``("adjudication", "DecisionValue")``.
"""

from .categories import (
    NewCategory,
    add_category,
    delete_category,
    edit_category,
    merge_category,
    move_category,
    reassign_labels,
    rename_category,
    reorder_category,
    restore_category,
    retire_category,
    split_category,
    split_parts,
)
from .changes import (
    ChangeSet,
    CodebookEditError,
    Direction,
    changing,
    clean_key,
    clean_name,
    commit,
    current_version,
    get_or_create_codebook,
)
from .dimensions import (
    add_dimension,
    check_single_choice,
    edit_dimension,
    reorder_dimension,
    restore_dimension,
    retire_dimension,
)
from .labels import MovedLabels, annotators_of, gold_on, label_count, label_counts, labels_on
from .proposals import Proposal, accept_proposal, propose_category, reject_proposal

__all__ = [
    "ChangeSet",
    "CodebookEditError",
    "Direction",
    "MovedLabels",
    "NewCategory",
    "Proposal",
    "accept_proposal",
    "add_category",
    "add_dimension",
    "annotators_of",
    "changing",
    "check_single_choice",
    "clean_key",
    "clean_name",
    "commit",
    "current_version",
    "delete_category",
    "edit_category",
    "edit_dimension",
    "get_or_create_codebook",
    "gold_on",
    "label_count",
    "label_counts",
    "labels_on",
    "merge_category",
    "move_category",
    "propose_category",
    "reassign_labels",
    "reject_proposal",
    "rename_category",
    "reorder_category",
    "reorder_dimension",
    "restore_category",
    "restore_dimension",
    "retire_category",
    "retire_dimension",
    "split_category",
    "split_parts",
]
