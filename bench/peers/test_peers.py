"""The pure parts of `make bench-peers`, in milliseconds and without servers:

    .venv/bin/pytest bench/peers -q -p no:cacheprovider

(not collected by `make test`, whose testpaths are tests/).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PAGE_SIZE, WARMUP, make_items, random_pages
from report import ratio, table


def timing(median: float, p95: float) -> dict[str, float]:
    return {"median_ms": median, "p95_ms": p95, "bytes": 10_240}


TAXONOMIST = {
    "import": {"rate": 4000.0, "seconds": 2.5, "how": "a Celery job"},
    "submit": timing(6.0, 9.0),
    "list": timing(10.0, 14.0),
    "export": {"rate": 2000.0, "seconds": 5.0, "bytes": 3e6, "how": "zip"},
}
LABEL_STUDIO = {
    "import": {"rate": 5000.0, "seconds": 2.0, "how": "in the request"},
    "submit": timing(48.0, 60.0),
    "list": timing(74.0, 95.0),
    "export": {"rate": 1000.0, "seconds": 10.0, "bytes": 2e7, "how": "JSON"},
}


def test_the_items_are_the_same_for_every_tool_and_about_one_and_a_half_kilobytes() -> None:
    items = make_items(200)
    assert items == make_items(200)
    assert len({item["url"] for item in items}) == 200
    mean = sum(len(item["text"]) for item in items) / len(items)
    assert 1300 <= mean <= 1700
    assert all(1300 <= len(item["text"]) <= 1700 for item in items)


def test_random_pages_are_repeatable_and_inside_the_list() -> None:
    pages = random_pages(2000, 100)
    assert pages == random_pages(2000, 100)
    assert len(pages) == 100 + WARMUP
    assert all(0 <= page < 2000 // PAGE_SIZE for page in pages)


def test_ratio_above_one_means_the_first_tool_is_faster() -> None:
    assert ratio(TAXONOMIST, LABEL_STUDIO, "submit") == 8.0  # 48 ms against 6 ms
    assert ratio(TAXONOMIST, LABEL_STUDIO, "export") == 2.0  # 2,000/s against 1,000/s
    assert ratio(TAXONOMIST, LABEL_STUDIO, "import") == 0.8  # 4,000/s against 5,000/s: slower


def test_a_tool_that_failed_gets_n_a_and_its_reason_and_the_others_are_still_printed() -> None:
    results: dict[str, dict[str, Any]] = {
        "Taxonomist": TAXONOMIST,
        "Label Studio": LABEL_STUDIO,
        "doccano": {"error": "doccano needs Python 3.8-3.11; none found"},
    }
    lines = table(results, size=10_000, annotations=200, requests=100)
    submit = next(line for line in lines if line.startswith("submit 200 annotations"))
    assert submit.rstrip().endswith("n/a")
    assert "6.0 / 9.0" in submit and "48.0 / 60.0" in submit
    faster = next(line for line in lines if line.startswith("submit (median)"))
    assert faster.split()[-2:] == ["8.00x", "n/a"]
    assert "doccano: not measured: doccano needs Python 3.8-3.11; none found" in lines
    assert any(line.startswith("list: a page's median size: Taxonomist 10 KB") for line in lines)
