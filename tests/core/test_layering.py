"""The layering that imports cannot show (docs/architecture.md, "Apps and the direction of dependencies").

import-linter (`lint-imports`, pyproject.toml) checks every import. Two ways of knowing another app escape
it, and are read here from the source with `ast`:

* naming another app's database table in a string (SQL): the tables are each model's `_meta.db_table`,
  so any string literal anywhere in `apps/<app>/` that holds, as a word, a table of another app counts;
  a table reached through an imported model (`Item._meta.db_table`) is an import, which import-linter sees;
* `apps.get_model(...)` (or any `.get_model` call) on an app that is not below the caller's in the layers
  of pyproject.toml's import-linter contract: above it, or beside it on the same level. The app must be
  named in a literal, so that this check can read it.

There are none today (issue #19 point 2 removed the last: docs/decisions/0006-one-writer-per-table.md). A
new violation fails; so does an allowlist entry that no longer matches (the lists only shrink).
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from django.apps import apps

ROOT = Path(__file__).resolve().parents[2]
APPS = ROOT / "apps"

# (file, another app's table it names in a string) → why it is still there. Empty since issue #19 point 2:
# a new entry needs a reason and the point of an issue that removes it.
ALLOWED_TABLES: dict[tuple[str, str], str] = {}

# (file, "app_label.Model" it gets through .get_model) → why it is still there. Empty since issue #19
# point 2 (the codebook reaches labels through `taxonomy/label_stores.py`).
ALLOWED_GET_MODEL: dict[tuple[str, str], str] = {}


# (file, Model of another app it writes) → why it is still there. The label tables (annotation's
# Annotation, Finding, LabelValue; adjudication's Review, Decision, DecisionFinding, DecisionValue) may
# never be listed: `test_the_label_tables_have_one_writer`.
_RESTORE = (
    "the package restore writes a new study's rows of every app; its label tables go through their owners' "
    "writes"
)
_DEMO = "deleting a study clears what blocks the cascade; its label tables go through their owners' writes"
ALLOWED_WRITES: dict[tuple[str, str], str] = {
    ("apps/export/deletion.py", "Dimension"): _DEMO,
    ("apps/export/deletion.py", "Codebook"): _DEMO,
    ("apps/export/management/commands/load_demo.py", "Study"): "the demo study is created by the top app",
    ("apps/export/management/commands/load_demo.py", "Round"): "the demo's rounds are dated back",
    ("apps/export/package/restore.py", "Study"): _RESTORE,
    ("apps/export/package/restore.py", "Membership"): _RESTORE,
    ("apps/export/package/restore_guidelines.py", "GuidelinesVersion"): _RESTORE,
    ("apps/export/package/restore_guidelines.py", "GuidelinesAcknowledgement"): _RESTORE,
    ("apps/export/package/restore_items.py", "Item"): _RESTORE,
    ("apps/export/package/restore_items.py", "ItemComment"): _RESTORE,
    ("apps/export/package/restore_labels.py", "Round"): _RESTORE,
    ("apps/export/package/restore_labels.py", "RoundItem"): _RESTORE,
    ("apps/export/package/restore_labels.py", "Assignment"): _RESTORE,
    ("apps/export/package/restore_labels.py", "GoldItem"): _RESTORE,
    ("apps/export/package/writing.py", "User"): _RESTORE,
    ("apps/export/package/writing.py", "Codebook"): _RESTORE,
    ("apps/export/package/writing.py", "Dimension"): _RESTORE,
    ("apps/export/package/writing.py", "Category"): _RESTORE,
    ("apps/export/package/writing.py", "CodebookVersion"): _RESTORE,
    ("apps/export/package/writing.py", "CodebookChange"): _RESTORE,
}
LABEL_TABLES = {
    "annotation": {"Annotation", "Finding", "LabelValue"},
    "adjudication": {"Review", "Decision", "DecisionFinding", "DecisionValue"},
}
WRITE_METHODS = {
    "create",
    "bulk_create",
    "update",
    "delete",
    "get_or_create",
    "update_or_create",
    "bulk_update",
}


def contract(contract_id: str) -> dict[str, Any]:
    """The import-linter contract of pyproject.toml with this id."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (found,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == contract_id]
    return found


def layer_ranks() -> dict[str, int]:
    """App package name → its level in the import-linter layers contract (0 is the bottom, `core`)."""
    levels = list(reversed(contract("layers")["layers"]))
    return {app.strip(): rank for rank, level in enumerate(levels) for app in re.split(r"[|:]", level)}


def tables_by_app() -> dict[str, str]:
    """Database table → the package name of the app whose model it is (auto-created m2m tables too)."""
    return {
        model._meta.db_table: config.name.removeprefix("apps.")
        for config in apps.get_app_configs()
        if config.name.startswith("apps.")
        for model in config.get_models(include_auto_created=True)
    }


def named_tables(source: str, own_app: str, tables: Mapping[str, str]) -> Iterator[tuple[int, str]]:
    """(line, table) for every string literal of `source` naming, as a word, a table not of `own_app`."""
    foreign = [table for table, owner in tables.items() if owner != own_app]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            for table in foreign:
                if re.search(rf"\b{re.escape(table)}\b", node.value):
                    yield node.lineno, table


def got_models(source: str) -> Iterator[tuple[int, str | None]]:
    """(line, "app_label.Model") for every `.get_model(...)` call of `source`; None when not literal."""
    for node in ast.walk(ast.parse(source)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get_model"
        ):
            continue
        args = [arg.value if isinstance(arg, ast.Constant) else None for arg in node.args]
        if len(args) == 1 and isinstance(args[0], str) and "." in args[0]:
            yield node.lineno, args[0]
        elif len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
            yield node.lineno, f"{args[0]}.{args[1]}"
        else:
            yield node.lineno, None


def app_sources() -> Iterator[tuple[str, str, str]]:
    """(path from the repository root, app package name, source) of every module of every app."""
    for path in sorted(APPS.glob("*/**/*.py")):
        yield path.relative_to(ROOT).as_posix(), path.relative_to(APPS).parts[0], path.read_text("utf-8")


def table_violations() -> dict[tuple[str, str], list[int]]:
    tables = tables_by_app()
    found: dict[tuple[str, str], list[int]] = {}
    for path, app, source in app_sources():
        for line, table in named_tables(source, app, tables):
            found.setdefault((path, table), []).append(line)
    return found


def get_model_violations() -> dict[tuple[str, str], list[int]]:
    ranks = layer_ranks()
    label_to_app = {config.label: config.name.removeprefix("apps.") for config in apps.get_app_configs()}
    found: dict[tuple[str, str], list[int]] = {}
    for path, app, source in app_sources():
        for line, model in got_models(source):
            target = label_to_app.get(model.partition(".")[0]) if model else None
            if model is None or (target != app and ranks.get(target or "", -1) >= ranks[app]):
                found.setdefault((path, model or "<not a literal>"), []).append(line)
    return found


def _root(node: ast.AST) -> tuple[str | None, bool]:
    """The name a call chain starts from (`LabelValue` in `LabelValue.objects.filter(...).delete`) and
    whether the chain goes through a manager (`objects`, `_default_manager`)."""
    manager = False
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            manager = manager or node.attr in ("objects", "_default_manager")
            node = node.value
        else:
            return (node.id if isinstance(node, ast.Name) else None), manager


def written_models(source: str, own_app: str) -> Iterator[tuple[int, str]]:
    """(line, Model) for every write of `source` on a model imported from another app's `models`: a
    manager's create / update / delete / bulk_* (however filtered first), or `insert_rows(Model, ...)`."""
    tree = ast.parse(source)
    foreign = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("apps.")
        and (node.module or "").endswith(".models")
        and (node.module or "").split(".")[1] != own_app
        for alias in node.names
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in WRITE_METHODS:
            name, manager = _root(func.value)
            if manager and name in foreign:
                yield node.lineno, name
        elif isinstance(func, ast.Name) and func.id == "insert_rows" and node.args:
            name, _ = _root(node.args[0])
            if name in foreign:
                yield node.lineno, name


def write_violations() -> dict[tuple[str, str], list[int]]:
    found: dict[tuple[str, str], list[int]] = {}
    for path, app, source in app_sources():
        if "/migrations/" in path:
            continue
        for line, model in written_models(source, app):
            found.setdefault((path, model), []).append(line)
    return found


def test_every_app_has_a_layer() -> None:
    ours = {c.name.removeprefix("apps.") for c in apps.get_app_configs() if c.name.startswith("apps.")}
    assert ours == set(layer_ranks())


def test_no_app_names_another_apps_table_in_a_string() -> None:
    new = {key: lines for key, lines in table_violations().items() if key not in ALLOWED_TABLES}
    assert not new, f"another app's table named in SQL (file, table) → lines; import its model instead: {new}"


def test_no_app_gets_a_model_of_an_app_not_below_it() -> None:
    new = {key: lines for key, lines in get_model_violations().items() if key not in ALLOWED_GET_MODEL}
    assert not new, f"apps.get_model on an app above or beside (file, model) → lines: {new}"


def test_no_app_writes_another_apps_tables() -> None:
    new = {key: lines for key, lines in write_violations().items() if key not in ALLOWED_WRITES}
    assert not new, f"another app's model written (file, model) → lines; call its writes module: {new}"


def test_the_label_tables_have_one_writer() -> None:
    """Annotation writes its labels, adjudication its reviews and decisions; nobody else, not even with a
    reason (docs/decisions/0006-one-writer-per-table.md)."""
    labels = {model for models in LABEL_TABLES.values() for model in models}
    assert not [key for key in (*ALLOWED_WRITES, *write_violations()) if key[1] in labels]


def test_the_allowlists_hold_no_stale_entry() -> None:
    """An allowed violation that is gone must leave the list, so that it cannot come back unnoticed."""
    stale = (
        (ALLOWED_TABLES.keys() - table_violations().keys())
        | (ALLOWED_GET_MODEL.keys() - get_model_violations().keys())
        | (ALLOWED_WRITES.keys() - write_violations().keys())
    )
    assert not stale, f"fixed: remove these entries from tests/core/test_layering.py: {sorted(stale)}"


def test_every_module_that_says_it_is_pure_is_in_the_pure_contract() -> None:
    """A module's docstring saying "Pure" or "No Django" is a promise lint-imports keeps only for the
    modules listed in the `pure` contract: the list and the docstrings must agree."""
    says_pure = set()
    for path, _app, source in app_sources():
        if re.search(r"\bPure\b|\b[Nn]o Django\b", ast.get_docstring(ast.parse(source)) or ""):
            says_pure.add(path.removesuffix(".py").removesuffix("/__init__").replace("/", "."))
    assert says_pure == set(contract("pure")["source_modules"])


def test_a_write_on_another_apps_model_is_found_through_filters_and_bulk_inserts() -> None:
    source = """
from apps.annotation.models import LabelValue as LV, Round
from .models import Decision
LV.objects.filter(category=c).update(category=t)
insert_rows(Round, rows)
Decision.objects.create(item=i)
LV.objects.filter(category=c).count()
"""
    assert sorted(written_models(source, "adjudication")) == [(4, "LV"), (5, "Round")]


def test_a_table_name_in_sql_is_found_as_a_word_only() -> None:
    source = '''
SQL = f"""SELECT 1 FROM adjudication_review v JOIN "{Item._meta.db_table}" i ON i.id = v.item_id"""
NOT_A_TABLE = "adjudication_reviewer"
OWN = "SELECT * FROM annotation_round"
'''
    tables = {"adjudication_review": "adjudication", "annotation_round": "annotation"}
    assert list(named_tables(source, "annotation", tables)) == [(2, "adjudication_review")]


def test_get_model_calls_are_read_in_both_spellings_and_a_dynamic_one_is_reported() -> None:
    source = """
a = apps.get_model("adjudication", "DecisionValue")
b = django_apps.get_model("annotation.LabelValue")
c = apps.get_model(label, "Item")
d = apps.get_models()
"""
    assert sorted(got_models(source)) == [
        (2, "adjudication.DecisionValue"),
        (3, "annotation.LabelValue"),
        (4, None),
    ]


def test_the_layers_rank_siblings_alike_and_core_lowest() -> None:
    ranks = layer_ranks()
    assert ranks["core"] == 0 < ranks["accounts"] < ranks["corpus"] == ranks["taxonomy"] < ranks["annotation"]
    assert ranks["annotation"] < ranks["agreement"] == ranks["adjudication"] < ranks["export"]
