"""Views stay thin and modules hold one concern (docs/architecture.md, "Layers"; issue #19).

No function of a views or API module (`apps/<app>/views.py`, `apps/<app>/views/*.py`, `apps/<app>/api.py`,
`apps/<app>/api_*.py`), view or helper, is longer than 50 lines, its docstring and decorators aside: a
longer one holds logic that belongs in a service, a read module or a presenter
(`agreement/dashboard_figures.py` is the dashboard's). No module of `apps/` is longer than 600 lines.
Read with `ast` and line counts, no database.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 50

# (file, function) → why it may be longer. Empty: a new entry needs a reason a reviewer accepts.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def view_modules() -> list[Path]:
    apps = ROOT / "apps"
    return sorted(
        [
            *apps.glob("*/views.py"),
            *apps.glob("*/views/*.py"),
            *apps.glob("*/api.py"),
            *apps.glob("*/api_*.py"),
        ]
    )


def body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the `def` to the end, without the docstring (decorators are above the `def`)."""
    lines = (function.end_lineno or function.lineno) - function.lineno + 1
    first = function.body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        lines -= (first.end_lineno or first.lineno) - first.lineno + 1
    return lines


def long_functions() -> dict[tuple[str, str], int]:
    found = {}
    for path in view_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and body_lines(node) > LIMIT:
                found[(path.relative_to(ROOT).as_posix(), node.name)] = body_lines(node)
    return found


def test_every_views_module_is_read() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in view_modules()}
    assert "apps/annotation/views/workbench.py" in names and "apps/agreement/views.py" in names
    assert "apps/annotation/api_threads.py" in names and "apps/corpus/api.py" in names


def test_no_view_function_is_longer_than_fifty_lines() -> None:
    too_long = {key: n for key, n in long_functions().items() if key not in EXCEPTIONS}
    assert not too_long, (
        f"view functions over {LIMIT} lines (file, function) → lines; move logic out: {too_long}"
    )


def test_the_exceptions_hold_no_stale_entry() -> None:
    assert not (EXCEPTIONS.keys() - long_functions().keys())


def test_a_function_is_measured_without_its_docstring() -> None:
    source = "def f():\n    '''Doc\n    more.'''\n" + "    x = 1\n" * 49
    (function,) = ast.parse(source).body
    assert isinstance(function, ast.FunctionDef)
    assert body_lines(function) == 50


MODULE_LIMIT = 600

# module → why it may be longer than MODULE_LIMIT lines. Empty: split a module that grows past it.
MODULE_EXCEPTIONS: dict[str, str] = {}


def long_modules() -> dict[str, int]:
    """Every Python module of `apps/` (migrations aside: generated) over MODULE_LIMIT lines."""
    found = {}
    for path in sorted((ROOT / "apps").rglob("*.py")):
        if "migrations" in path.parts:
            continue
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MODULE_LIMIT:
            found[path.relative_to(ROOT).as_posix()] = lines
    return found


def test_no_module_of_the_apps_is_longer_than_six_hundred_lines() -> None:
    too_long = {name: n for name, n in long_modules().items() if name not in MODULE_EXCEPTIONS}
    assert not too_long, f"modules over {MODULE_LIMIT} lines → lines; split them by concern: {too_long}"


def test_the_module_exceptions_hold_no_stale_entry() -> None:
    assert not (MODULE_EXCEPTIONS.keys() - long_modules().keys())
