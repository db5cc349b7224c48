"""The Paper screen and its downloads, through the test client: saturation, cross-tab, figures and the
methods section (issue #22)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.test import Client
from django.urls import reverse

from apps.accounts.models import Study

pytestmark = pytest.mark.django_db


def test_the_paper_page_shows_saturation_and_the_chosen_crosstab(
    labelled: Study, lead_client: Client
) -> None:
    url = reverse("export:paper", args=[labelled.slug])
    response = lead_client.get(url, {"dimension": "symptom", "base": "1", "run": "1", "threshold": "0",
                                     "rows": "symptom", "rows_level": "1", "cols": "source"})  # fmt: skip
    assert response.status_code == 200
    html = response.content.decode()
    # symptom, by first submission: item 1 segfault (both), item 2 oom (alice): 1 new code in the run.
    assert "Saturation not reached" in html
    assert "Crash" in html and "github" in html and "stackoverflow" in html
    assert "/paper/crosstab.csv?" in html and "/paper/figures/saturation.svg?" in html


def test_a_bad_request_is_explained_on_the_page(labelled: Study, lead_client: Client) -> None:
    response = lead_client.get(reverse("export:paper", args=[labelled.slug]), {"cols": "colour"})
    assert response.status_code == 400
    assert "no item of the study has a field" in response.content.decode()


def test_the_crosstab_downloads_hold_the_commands_numbers(labelled: Study, lead_client: Client) -> None:
    base = reverse("export:paper-crosstab", args=[labelled.slug, "json"])
    data = json.loads(lead_client.get(base, {"rows": "symptom", "rows_level": "1", "cols": "source"}).content)
    assert data["counts"] == [[2, 0], [0, 1]]
    text = lead_client.get(
        base.replace(".json", ".csv"), {"rows": "symptom", "cols": "source"}
    ).content.decode()
    assert ["Total", "Total", "3", "", ""] in list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("name", ["agreement", "saturation", "distribution", "crosstab", "confusion"])
@pytest.mark.parametrize("fmt", ["svg", "pdf"])
def test_every_figure_downloads_as_svg_and_pdf(
    labelled: Study, lead_client: Client, name: str, fmt: str
) -> None:
    url = reverse("export:paper-figure", args=[labelled.slug, name, fmt])
    response = lead_client.get(url, {"dimension": "type", "a": "alice", "b": "bob", "round": "1"})
    assert response.status_code == 200, response.content[:300]
    assert response.content.startswith(b"%PDF-" if fmt == "pdf" else b"<?xml")
    assert "attachment" in response["Content-Disposition"]


def test_a_figure_without_data_says_why(labelled: Study, lead_client: Client) -> None:
    url = reverse("export:paper-figure", args=[labelled.slug, "confusion", "svg"])
    response = lead_client.get(url, {"dimension": "type", "a": "alice"})
    assert response.status_code == 400
    assert b"two different annotators" in response.content


def test_the_methods_page_and_files_state_the_study_s_numbers(labelled: Study, lead_client: Client) -> None:
    html = lead_client.get(reverse("export:paper-methods", args=[labelled.slug])).content.decode()
    assert "in round 1 (n = 2), Cohen&#x27;s kappa was 0.000" in html
    tex = lead_client.get(reverse("export:paper-methods-file", args=[labelled.slug, "tex"])).content.decode()
    assert r"\begin{document}" in tex and "Cohen's kappa was 0.000" in tex
    bib = lead_client.get(reverse("export:paper-methods-file", args=[labelled.slug, "bib"])).content.decode()
    assert "@article{guest2020" in bib


def test_annotators_cannot_open_the_paper(labelled: Study, client: Client, annotator_a: object) -> None:
    client.force_login(annotator_a)  # type: ignore[arg-type]
    assert client.get(reverse("export:paper", args=[labelled.slug])).status_code == 403
