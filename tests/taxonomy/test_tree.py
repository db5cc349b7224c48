"""Category trees: paths and levels, safe moves and merges, typed labels, near duplicates, label remaps."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from apps.taxonomy.tree import (
    AmbiguousLabelError,
    CategoryTree,
    LabelRow,
    Node,
    TreeError,
    UnknownLabelError,
    name_similarity,
    near_duplicates,
    normalize_name,
    remap_for_merge,
    remap_for_split,
    resolve_label,
)

# Part of the TOSEM 2023 symptom taxonomy, in sibling order.
ROWS = [
    Node(1, None, "package-build-import", "Package Build & Import"),
    Node(2, 1, "installation-build-failure", "installation & build failure"),
    Node(3, 1, "import-error", "import error"),
    Node(4, None, "communication-setup", "Communication Setup"),
    Node(5, 4, "setup-failure", "setup failure"),
    Node(6, 4, "hang-and-timeout", "hang and timeout"),
    Node(7, None, "training-evaluation", "Training & Evaluation"),
    Node(8, 7, "program-failure", "Program Failure"),
    Node(9, 8, "out-of-memory", "out of memory"),
    Node(13, 8, "program-failure-other", "Other"),
    Node(10, 7, "unexpected-performance", "Unexpected Performance"),
    Node(11, 10, "hang", "hang"),
    Node(12, 10, "low-efficiency", "low efficiency"),
    Node(14, 10, "unexpected-performance-other", "Other"),
]


@pytest.fixture
def tree() -> CategoryTree:
    return CategoryTree.from_rows(ROWS)


# --- Building ------------------------------------------------------------------------------------------


def test_rows_may_be_plain_tuples_or_mappings() -> None:
    as_tuples = CategoryTree.from_rows([tuple(row) for row in ROWS])
    as_dicts = CategoryTree.from_rows([row._asdict() for row in ROWS])
    assert [as_tuples.path_string(i) for i in as_tuples] == [as_dicts.path_string(i) for i in as_dicts]
    assert len(as_dicts) == 14


def test_iteration_is_depth_first_in_row_order(tree: CategoryTree) -> None:
    assert list(tree) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 10, 11, 12, 14]


def test_the_row_order_of_parents_and_children_does_not_matter() -> None:
    shuffled = CategoryTree.from_rows(list(reversed(ROWS)))
    assert shuffled.path_string(9) == "Training & Evaluation > Program Failure > out of memory"
    assert shuffled.children(8) == [13, 9]  # siblings keep their row order


def test_a_duplicate_id_is_refused() -> None:
    with pytest.raises(TreeError, match="row 1: duplicate category id 1"):
        CategoryTree.from_rows([Node(1, None, "a", "A"), Node(1, None, "b", "B")])


def test_a_duplicate_key_is_refused() -> None:
    with pytest.raises(TreeError, match=r"row 1: duplicate category key 'a' \(ids 1 and 2\)"):
        CategoryTree.from_rows([Node(1, None, "a", "A"), Node(2, None, "a", "B")])


def test_an_unknown_parent_is_refused() -> None:
    with pytest.raises(TreeError, match=r"category 2 \('b'\) has unknown parent 99"):
        CategoryTree.from_rows([Node(1, None, "a", "A"), Node(2, 99, "b", "B")])


def test_a_cycle_of_parents_is_refused() -> None:
    rows = [Node(1, None, "a", "A"), Node(2, 3, "b", "B"), Node(3, 2, "c", "C"), Node(4, 4, "d", "D")]
    with pytest.raises(TreeError, match=r"categories \[2, 3, 4\] form a cycle of parents"):
        CategoryTree.from_rows(rows)


def test_a_malformed_row_is_refused_with_its_index() -> None:
    with pytest.raises(TreeError, match=r"row 1: expected \(id, parent_id, key, name\), got \{'id': 2\}"):
        CategoryTree.from_rows([Node(1, None, "a", "A"), {"id": 2}])


# --- Paths and levels ----------------------------------------------------------------------------------


def test_paths_run_from_the_top_down(tree: CategoryTree) -> None:
    assert tree.path_of_names(11) == ["Training & Evaluation", "Unexpected Performance", "hang"]
    assert tree.path_string(11) == "Training & Evaluation > Unexpected Performance > hang"
    assert tree.path_string(11, sep="/") == "Training & Evaluation/Unexpected Performance/hang"
    assert tree.path_of_names(4) == ["Communication Setup"]


def test_depth_counts_the_top_as_one(tree: CategoryTree) -> None:
    assert [tree.depth(i) for i in (7, 10, 11, 5)] == [1, 2, 3, 2]


def test_ancestor_at_depth_cuts_the_path(tree: CategoryTree) -> None:
    assert tree.ancestor_at_depth(11, 1) == 7
    assert tree.ancestor_at_depth(11, 2) == 10
    assert tree.ancestor_at_depth(11, 3) == 11


def test_ancestor_at_a_depth_below_the_node_is_the_node_itself(tree: CategoryTree) -> None:
    assert tree.ancestor_at_depth(5, 3) == 5
    assert tree.ancestor_at_depth(7, 10) == 7


def test_ancestor_at_depth_zero_is_refused(tree: CategoryTree) -> None:
    with pytest.raises(ValueError, match="depth must be 1 or more, got 0"):
        tree.ancestor_at_depth(11, 0)


def test_descendants_are_the_whole_subtree_without_the_node(tree: CategoryTree) -> None:
    assert tree.descendants(7) == [8, 9, 13, 10, 11, 12, 14]
    assert tree.descendants(11) == []
    assert tree.ancestors(11) == [7, 10]


def test_is_descendant_is_strict_and_directed(tree: CategoryTree) -> None:
    assert tree.is_descendant(11, 7)
    assert tree.is_descendant(11, 10)
    assert not tree.is_descendant(7, 11)
    assert not tree.is_descendant(11, 11)
    assert not tree.is_descendant(12, 11)  # a sibling
    assert not tree.is_descendant(6, 7)  # another branch


def test_an_unknown_id_is_named(tree: CategoryTree) -> None:
    with pytest.raises(TreeError, match="unknown category id 99"):
        tree.depth(99)
    with pytest.raises(TreeError, match="unknown category key 'nope'"):
        tree.by_key("nope")
    assert tree.by_key("hang") == ROWS[11]
    assert 99 not in tree
    assert 11 in tree


def test_children_of_none_are_the_top_level(tree: CategoryTree) -> None:
    assert tree.children(None) == tree.roots() == [1, 4, 7]
    assert tree.children(10) == [11, 12, 14]


# --- Moves and merges ----------------------------------------------------------------------------------


def test_a_category_cannot_move_into_its_own_subtree(tree: CategoryTree) -> None:
    with pytest.raises(TreeError) as caught:
        tree.check_move(7, 10)
    assert str(caught.value) == (
        "cannot move 'Training & Evaluation' under 'Training & Evaluation > Unexpected Performance', "
        "which lies inside it"
    )
    with pytest.raises(TreeError, match="cannot move 'Communication Setup' under itself"):
        tree.check_move(4, 4)


def test_a_category_may_move_sideways_up_or_to_the_top(tree: CategoryTree) -> None:
    tree.check_move(11, 4)
    tree.check_move(11, 7)
    tree.check_move(10, None)
    tree.check_move(6, 11)


def test_a_category_cannot_merge_into_itself_or_its_descendant(tree: CategoryTree) -> None:
    with pytest.raises(TreeError, match="cannot merge 'Communication Setup' into itself"):
        tree.check_merge(4, 4)
    with pytest.raises(
        TreeError, match="into 'Communication Setup > hang and timeout', which lies inside it"
    ):
        tree.check_merge(4, 6)


def test_a_category_may_merge_into_its_parent_or_another_branch(tree: CategoryTree) -> None:
    tree.check_merge(11, 10)
    tree.check_merge(11, 6)


# --- Resolving typed labels ----------------------------------------------------------------------------


def test_a_key_resolves_exactly(tree: CategoryTree) -> None:
    assert tree.resolve("hang-and-timeout") == 6
    assert tree.resolve("  program-failure-other ") == 13


def test_a_full_path_resolves_ignoring_case_and_spacing(tree: CategoryTree) -> None:
    assert tree.resolve("Training & Evaluation > Unexpected Performance > Hang") == 11
    assert tree.resolve("training & evaluation>unexpected  performance >hang") == 11
    assert tree.resolve("TRAINING & EVALUATION > PROGRAM FAILURE > OTHER") == 13


def test_the_end_of_a_path_resolves_when_it_names_one_category(tree: CategoryTree) -> None:
    assert tree.resolve("Unexpected Performance > Other") == 14
    assert tree.resolve("program failure > out of memory") == 9


def test_a_bare_name_resolves_when_it_is_unique(tree: CategoryTree) -> None:
    assert tree.resolve("Hang and Timeout") == 6
    assert tree.resolve("out of memory") == 9


def test_a_key_in_capitals_resolves_when_no_name_matches(tree: CategoryTree) -> None:
    assert tree.resolve("LOW-EFFICIENCY") == 12


def test_an_ambiguous_name_lists_every_candidate_path(tree: CategoryTree) -> None:
    with pytest.raises(AmbiguousLabelError) as caught:
        tree.resolve("other")
    assert caught.value.candidates == [
        "Training & Evaluation > Program Failure > Other",
        "Training & Evaluation > Unexpected Performance > Other",
    ]
    assert str(caught.value) == (
        "label 'other' is ambiguous: it could be 'Training & Evaluation > Program Failure > Other'; "
        "'Training & Evaluation > Unexpected Performance > Other'"
    )


def test_an_ambiguous_path_end_lists_its_candidates() -> None:
    rows = [
        Node(1, None, "a", "Alpha"),
        Node(2, 1, "a-x", "X"),
        Node(3, 2, "a-x-leaf", "Leaf"),
        Node(4, None, "b", "Beta"),
        Node(5, 4, "b-x", "X"),
        Node(6, 5, "b-x-leaf", "Leaf"),
    ]
    with pytest.raises(AmbiguousLabelError) as caught:
        resolve_label("x > leaf", rows)
    assert caught.value.candidates == ["Alpha > X > Leaf", "Beta > X > Leaf"]
    assert resolve_label("beta > x > leaf", rows) == 6


def test_a_full_path_wins_over_a_longer_path_ending_the_same_way() -> None:
    rows = [Node(1, None, "a", "A"), Node(2, 1, "b", "B"), Node(3, None, "z", "Z"), Node(4, 3, "za", "A")]
    rows.append(Node(5, 4, "zab", "B"))
    assert resolve_label("A > B", rows) == 2  # 'Z > A > B' also ends with 'A > B'


def test_a_top_level_name_is_a_full_path_and_wins_over_deeper_namesakes() -> None:
    rows = [Node(1, None, "misc", "Other"), Node(2, None, "a", "A"), Node(3, 2, "a-other", "Other")]
    assert resolve_label("other", rows) == 1
    assert resolve_label("OTHER", rows) == 1
    assert resolve_label("A > Other", rows) == 3


def test_an_unknown_label_suggests_close_matches(tree: CategoryTree) -> None:
    with pytest.raises(UnknownLabelError) as caught:
        tree.resolve("hang & timeout")
    assert caught.value.candidates[0] == "Communication Setup > hang and timeout"
    assert "did you mean 'Communication Setup > hang and timeout'" in str(caught.value)
    with pytest.raises(UnknownLabelError) as caught:
        tree.resolve("installatiovn & build failure")
    assert caught.value.candidates == ["Package Build & Import > installation & build failure"]


def test_an_unknown_label_without_close_matches_says_only_that(tree: CategoryTree) -> None:
    with pytest.raises(UnknownLabelError) as caught:
        tree.resolve("quantum entanglement")
    assert str(caught.value) == "unknown category 'quantum entanglement'"
    assert caught.value.candidates == []


def test_an_unknown_path_is_refused(tree: CategoryTree) -> None:
    with pytest.raises(UnknownLabelError, match="unknown category 'Communication Setup > hang'"):
        tree.resolve("Communication Setup > hang")


@pytest.mark.parametrize("text", ["", "   ", "a >", "> hang", "a >> b"])
def test_an_empty_label_or_path_part_is_refused(tree: CategoryTree, text: str) -> None:
    with pytest.raises(UnknownLabelError, match="empty"):
        tree.resolve(text)


# --- Near duplicates -----------------------------------------------------------------------------------


def test_names_are_normalized_for_comparison() -> None:
    assert normalize_name("  Hang & Timeouts! ") == "hang and timeout"
    assert normalize_name("Out-of-Memory") == "out of memory"
    assert normalize_name("dependencies") == "dependency"
    assert normalize_name("classes") == "class"
    assert normalize_name("batches") == "batch"
    assert normalize_name("status") == "status"
    assert normalize_name("analysis") == "analysis"


def test_near_duplicates_catch_spelling_variants_of_existing_names() -> None:
    existing = ["hang and timeout", "out of memory", "import error", "installation & build failure"]
    assert near_duplicates("Hang & Timeout", existing) == ["hang and timeout"]
    assert near_duplicates("out-of-memory", existing) == ["out of memory"]
    assert near_duplicates("Import errors", existing) == ["import error"]
    assert near_duplicates("installatiovn & build failure", existing) == ["installation & build failure"]
    assert near_duplicates("timeout and hang", existing) == ["hang and timeout"]


def test_different_names_are_not_near_duplicates() -> None:
    existing = ["hang", "low efficiency", "setup failure", "out of memory"]
    assert near_duplicates("graph execution error", existing) == []
    assert near_duplicates("!!!", existing) == []


def test_near_duplicates_come_most_similar_first_and_once() -> None:
    existing = ["Import error", "import errors", "Import error", "import  error!"]
    assert near_duplicates("import error", existing) == ["Import error", "import errors", "import  error!"]
    assert near_duplicates("imports errors", ["import errors x", "import error"]) == [
        "import error",
        "import errors x",
    ]


@given(st.text(max_size=30), st.text(max_size=30))
def test_name_similarity_is_symmetric_and_bounded(a: str, b: str) -> None:
    assert name_similarity(a, b) == name_similarity(b, a)
    assert 0.0 <= name_similarity(a, b) <= 1.0


@given(st.text(max_size=30))
def test_a_name_is_a_near_duplicate_of_itself(name: str) -> None:
    assert near_duplicates(name, [name]) == ([name] if normalize_name(name) else [])


# --- Remapping labels ----------------------------------------------------------------------------------


def test_a_merge_moves_the_source_labels_and_keeps_what_was_chosen(tree: CategoryTree) -> None:
    labels = [
        LabelRow(100, 11, None),  # hang
        LabelRow(101, 12, None),  # low efficiency
        LabelRow(102, 11, None),
        LabelRow(103, None, None),  # pending
    ]
    remap = remap_for_merge(labels, source_id=11, target_id=6, tree=tree)
    assert remap.changed == [LabelRow(100, 6, 11), LabelRow(102, 6, 11)]
    assert remap.dropped == []


def test_a_second_merge_keeps_the_first_original() -> None:
    once = remap_for_merge([LabelRow(1, 11, None)], 11, 10).changed
    twice = remap_for_merge(once, 10, 7).changed
    assert twice == [LabelRow(1, 7, 11)]


def test_a_merge_drops_a_label_its_finding_already_has_for_the_target() -> None:
    labels = [
        LabelRow(1, 11, None, finding_id=5),
        LabelRow(2, 12, None, finding_id=5),
        LabelRow(3, 11, None, 6),
    ]
    remap = remap_for_merge(labels, source_id=11, target_id=12)
    assert remap.changed == [LabelRow(3, 12, 11, 6)]
    assert remap.dropped == [LabelRow(1, 11, None, 5)]


def test_a_merge_into_a_descendant_is_refused_when_the_tree_is_given(tree: CategoryTree) -> None:
    with pytest.raises(TreeError, match="which lies inside it"):
        remap_for_merge([LabelRow(1, 10, None)], 10, 11, tree=tree)
    with pytest.raises(ValueError, match="cannot merge category 10 into itself"):
        remap_for_merge([LabelRow(1, 10, None)], 10, 10)


def test_a_split_gives_each_label_its_chosen_category() -> None:
    labels = [LabelRow(1, 6, None), LabelRow(2, 6, None), LabelRow(3, 6, 99), LabelRow(4, 5, None)]
    remap = remap_for_split(labels, source_id=6, assignment={1: 11, 2: 6, 3: 12})
    assert remap.changed == [LabelRow(1, 11, 6), LabelRow(3, 12, 99)]
    assert remap.dropped == []


def test_a_split_must_assign_every_label_of_the_source_and_only_those() -> None:
    labels = [LabelRow(1, 6, None), LabelRow(2, 6, None), LabelRow(3, 5, None)]
    with pytest.raises(ValueError, match=r"labels \[2\] on category 6 have no new category"):
        remap_for_split(labels, 6, {1: 11})
    with pytest.raises(ValueError, match=r"labels \[3\] are not on category 6"):
        remap_for_split(labels, 6, {1: 11, 2: 11, 3: 11})


def test_a_split_into_an_unknown_category_is_refused_when_the_tree_is_given(tree: CategoryTree) -> None:
    with pytest.raises(TreeError, match="label 1: new category 99 is not in this dimension"):
        remap_for_split([LabelRow(1, 6, None)], 6, {1: 99}, tree=tree)


def test_a_split_drops_a_label_its_finding_already_has() -> None:
    labels = [
        LabelRow(1, 6, None, 7),
        LabelRow(2, 11, None, 7),
        LabelRow(3, 6, None, 8),
        LabelRow(4, 6, None, 8),
    ]
    remap = remap_for_split(labels, 6, {1: 11, 3: 12, 4: 12})
    assert remap.changed == [LabelRow(3, 12, 6, 8)]
    assert remap.dropped == [LabelRow(1, 6, None, 7), LabelRow(4, 6, None, 8)]


def test_a_repeated_label_id_is_refused() -> None:
    with pytest.raises(ValueError, match="label 1 appears twice"):
        remap_for_merge([LabelRow(1, 6, None), LabelRow(1, 5, None)], 6, 5)


# --- Properties against a naive walk over parent links -------------------------------------------------


@st.composite
def random_rows(draw: st.DrawFn) -> list[Node]:
    """A random forest: node i's parent is an earlier node or none; ids shuffled; names from a small pool
    so names repeat, but never among siblings."""
    size = draw(st.integers(1, 25))
    parents = [draw(st.one_of(st.none(), st.integers(0, i - 1))) if i else None for i in range(size)]
    ids = draw(st.permutations(range(100, 100 + size)))
    rows = []
    used: dict[int | None, set[str]] = {}
    for i, parent in enumerate(parents):
        name = draw(st.sampled_from(["Alpha", "Beta", "gamma", "Other"]))
        siblings = used.setdefault(parent, set())
        if name in siblings:
            name = f"{name} {i}"
        siblings.add(name)
        rows.append(Node(ids[i], None if parent is None else ids[parent], f"k{i}", name))
    order = draw(st.permutations(range(size)))
    return [rows[i] for i in order]


def naive_lineage(rows: list[Node], node_id: int) -> list[int]:
    parent_of = {row.id: row.parent_id for row in rows}
    lineage = [node_id]
    while parent_of[lineage[0]] is not None:
        lineage.insert(0, parent_of[lineage[0]])  # type: ignore[arg-type]
    return lineage


@settings(max_examples=200, deadline=None)
@given(random_rows(), st.data())
def test_tree_queries_agree_with_a_walk_over_parent_links(rows: list[Node], data: st.DataObject) -> None:
    tree = CategoryTree.from_rows(rows)
    names = {row.id: row.name for row in rows}
    a = data.draw(st.sampled_from([row.id for row in rows]))
    b = data.draw(st.sampled_from([row.id for row in rows]))
    n = data.draw(st.integers(1, 30))
    lineage = naive_lineage(rows, a)
    assert tree.depth(a) == len(lineage)
    assert tree.path_of_names(a) == [names[i] for i in lineage]
    assert tree.ancestor_at_depth(a, n) == lineage[min(n, len(lineage)) - 1]
    assert tree.is_descendant(a, b) == (b in lineage[:-1])
    assert set(tree.descendants(b)) == {row.id for row in rows if b in naive_lineage(rows, row.id)[:-1]}
    refused = a == b or a in naive_lineage(rows, b)[:-1]  # b is a itself or lies below a
    try:
        tree.check_move(a, b)
        moved = True
    except TreeError:
        moved = False
    assert moved == (not refused)


@settings(max_examples=200, deadline=None)
@given(random_rows())
def test_every_category_resolves_from_its_key_and_its_full_path(rows: list[Node]) -> None:
    tree = CategoryTree.from_rows(rows)
    for row in rows:
        assert tree.resolve(row.key) == row.id
        assert tree.resolve(tree.path_string(row.id)) == row.id
        assert tree.resolve(tree.path_string(row.id).upper()) == row.id


@given(
    st.lists(st.tuples(st.one_of(st.none(), st.integers(1, 5)), st.one_of(st.none(), st.integers(6, 9)))),
    st.integers(1, 5),
    st.integers(1, 5),
)
def test_a_merge_keeps_every_label_traceable_to_its_original(
    raw: list[tuple[int | None, int | None]], source: int, target: int
) -> None:
    assume(source != target)
    labels = [LabelRow(i, category, original) for i, (category, original) in enumerate(raw)]
    remap = remap_for_merge(labels, source, target)
    assert remap.dropped == []  # no finding ids given, so nothing can collide
    changed = {row.label_id: row for row in remap.changed}
    for label in labels:
        if label.category_id == source:
            first_choice = label.original_category_id if label.original_category_id is not None else source
            assert changed[label.label_id] == LabelRow(label.label_id, target, first_choice)
        else:
            assert label.label_id not in changed
