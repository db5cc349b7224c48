"""Issue #22 point 5: the dashboard, its downloads, agreement.md and agreement.json give the same n and
the same values for the same cell.

They disagreed: the dashboard's summary printed ``n_pairable`` (items rated by two or more) as "n" while
agreement.md printed ``n_items`` (items rated by anyone) as "items", so a cell read "n 55" on the page
and "items 62" in the package. The `labelled` study has exactly such a cell: in all rounds 2 items are
compared but 3 were rated. Every reader now goes through `agreement.presenter.scope_figures`.
"""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Study
from apps.export.package import build_package

pytestmark = pytest.mark.django_db

ALPHA, KAPPA = "\u03b1", "\u03ba"
CELL = re.compile(
    r'<a href="[^"]*dimension=(?P<dim>\w+)&amp;round=(?P<round>\w+)"[^>]*>'
    + ALPHA
    + r' (?P<alpha>[-\d.]+|<span class="na")'
    r'.*?<span class="sub">κ (?P<kappa>[-\d.]+|<span class="na")'
    r'.*?(?:<span class="ci">\[(?P<low>[-\d.]+), (?P<high>[-\d.]+)\]</span>)? · n (?P<n>\d+)</span>',
    re.S,
)


def number(text: str) -> float | None:
    return None if text.startswith("<") else float(text)


def dashboard_cells(client: Client, study: Study) -> dict[tuple[str, str], dict[str, Any]]:
    html = client.get(reverse("agreement:dashboard", args=[study.slug])).content.decode()
    cells = {
        (m["dim"], m["round"]): {
            "alpha": number(m["alpha"]),
            "kappa": number(m["kappa"]),
            "kappa_ci": (float(m["low"]), float(m["high"])) if m["low"] else None,
            "n": int(m["n"]),
        }
        for m in CELL.finditer(html)
    }
    assert cells, "no summary cell found on the dashboard"
    return cells


def markdown_rows(text: str, dimension: str) -> dict[str, dict[str, str]]:
    section = text.split(f"(`{dimension}`)", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    return {
        cells[0]: dict(zip(header, cells, strict=True))
        for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines[1:])
    }


def md_number(text: str) -> float | None:
    return None if text == "—" else float(text)


def scope_label(scope: str, md: dict[str, dict[str, str]]) -> str:
    return "all rounds" if scope == "all" else next(k for k in md if k.split(" ")[0] == scope)


def test_dashboard_package_and_downloads_agree_on_n_and_every_value(
    labelled: Study, lead_client: Client, tmp_path: Path
) -> None:
    cells = dashboard_cells(lead_client, labelled)
    build_package(labelled, tmp_path / "p.zip")
    with zipfile.ZipFile(tmp_path / "p.zip") as archive:
        md = archive.read("agreement.md").decode()
        data = json.loads(archive.read("agreement.json"))
    assert cells[("type", "all")]["n"] == 2  # compared; 3 items were rated: the cell that used to differ
    for (dimension, scope), cell in cells.items():
        rows = markdown_rows(md, dimension)
        row = rows[scope_label(scope, rows)]
        report = (
            data["all_rounds"][dimension]
            if scope == "all"
            else next(r for r in data["rounds"] if str(r["round"]) == scope)["dimensions"][dimension]
        )
        assert cell["n"] == int(row["items compared (n)"]) == report["n_pairable"], (dimension, scope)
        assert int(row["items rated"]) == report["n_items"]
        for key, column, metric in (
            ("alpha", f"Krippendorff {ALPHA}", "krippendorff_alpha"),
            ("kappa", f"Cohen {KAPPA}", "cohen_kappa"),
        ):
            expected = None if report[metric] is None else round(report[metric], 3)
            assert cell[key] == md_number(row[column]) == expected, (dimension, scope, key)
        for name, metric in (
            (ALPHA, "krippendorff_alpha"),
            (f"Cohen {KAPPA}", "cohen_kappa"),
            ("AC1", "gwet_ac1"),
        ):
            ci = report.get(f"{metric}_ci")
            assert md_number(row[f"{name} 95% CI low"]) == (None if ci is None else round(ci[0], 3)), metric
            assert md_number(row[f"{name} 95% CI high"]) == (None if ci is None else round(ci[1], 3)), metric
            if metric == "cohen_kappa":
                assert cell["kappa_ci"] == (None if ci is None else (round(ci[0], 2), round(ci[1], 2)))
        # The dashboard's rounds table, downloaded, says the same.
        url = reverse("agreement:table", args=[labelled.slug, "rounds", "csv"]) + f"?dimension={dimension}"
        download = list(csv.DictReader(io.StringIO(lead_client.get(url).content.decode())))
        line = next(r for r in download if r["Round"] == scope_label(scope, rows))
        assert int(line["items compared (n)"]) == cell["n"]
        assert (
            None if line[f"Krippendorff {ALPHA}"] == "" else float(line[f"Krippendorff {ALPHA}"])
        ) == cell["alpha"]


@pytest.mark.parametrize("name", ["summary", "rounds", "categories", "pairs", "confusion"])
@pytest.mark.parametrize("fmt", ["csv", "md", "tex"])
def test_every_dashboard_table_downloads_in_every_format(
    labelled: Study, lead_client: Client, name: str, fmt: str
) -> None:
    url = (
        reverse("agreement:table", args=[labelled.slug, name, fmt]) + "?dimension=type&round=1&a=alice&b=bob"
    )
    response = lead_client.get(url)
    assert response.status_code == 200, response.content
    assert f".{fmt}" in response["Content-Disposition"]
    text = response.content.decode()
    if fmt == "tex":
        assert r"\toprule" in text and r"\bottomrule" in text
    elif fmt == "md":
        assert text.count("|") > 4
    else:
        assert len(list(csv.reader(io.StringIO(text)))) >= 2
    if name == "confusion":
        assert "Fault" in text and "alice" in text


def test_the_dashboard_links_each_table_download(labelled: Study, lead_client: Client) -> None:
    html = lead_client.get(reverse("agreement:dashboard", args=[labelled.slug])).content.decode()
    for name in ("summary", "rounds", "categories", "pairs", "confusion"):
        for fmt in ("csv", "md", "tex"):
            assert f"/agreement/tables/{name}.{fmt}?" in html, (name, fmt)


def test_the_dashboards_confusion_matrix_downloads_as_a_figure(labelled: Study, lead_client: Client) -> None:
    html = lead_client.get(reverse("agreement:dashboard", args=[labelled.slug])).content.decode()
    figure = html.split('id="confusion-figure"', 1)[1].split("</p>", 1)[0]
    for fmt, magic in (("svg", b"<?xml"), ("pdf", b"%PDF-")):
        href = figure.split('href="', 1)[1] if fmt == "svg" else figure.split('href="')[2]
        url = href.split('"', 1)[0].replace("&amp;", "&")
        assert f"/paper/figures/confusion.{fmt}?" in url
        response = lead_client.get(url)
        assert response.status_code == 200 and response.content.startswith(magic), response.content[:200]


def test_a_confusion_download_without_two_annotators_is_refused_by_name(
    labelled: Study, lead_client: Client
) -> None:
    response = lead_client.get(
        reverse("agreement:table", args=[labelled.slug, "confusion", "csv"]) + "?a=alice"
    )
    assert response.status_code == 400
    assert b"two different annotators" in response.content
