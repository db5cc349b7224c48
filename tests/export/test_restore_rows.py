"""import_study writes exactly the rows it wrote before it was made fast (issue 10).

The varied study adds to `labelled` what the bulk writes have to get right: rendered Markdown and HTML
bodies, comments, screening, a disagreement, an agreement without a decision (consolidation makes one),
and labels on a merged category (consolidation follows the merge). Its restore is compared, row by row
and in id order (but for the set of a decision's source annotations, sorted), with
`data/restored_rows.json`: the rows the row-by-row import (before the bulk writes) wrote for the same
package. Foreign keys are shown as natural keys (URLs, usernames, round numbers, category keys);
timestamps after 2025 (the moment of the test, when the fixture or the restore wrote "now") as
"recent".

Regenerate the file only for an intended change of what a restore writes:
``RESTORED_ROWS=write pytest tests/export/test_restore_rows.py``.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.db.models import Model, QuerySet

from apps.accounts.models import Membership, Study, User
from apps.adjudication.models import Decision, DecisionFinding, DecisionValue, Provenance, Review
from apps.annotation.models import Annotation, Assignment, Finding, LabelValue, Round, RoundItem
from apps.corpus.models import Item, ItemComment, Source
from apps.export.package import build_package, import_study
from apps.taxonomy.models import Category, Codebook, CodebookChange, CodebookVersion, Dimension
from apps.taxonomy.services import merge_category
from tests.factories import ItemFactory

from .conftest import Labeller

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).parent / "data" / "restored_rows.json"
RECENT = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.fixture
def varied(labelled: Study, lead: User, annotator_a: User, annotator_b: User) -> Study:
    study = labelled
    round1, round2 = Round.objects.filter(study=study).order_by("number")
    for item in Item.objects.filter(study=study):  # not the factory's sequence, which depends on test order
        Item.objects.filter(pk=item.pk).update(external_id=item.url.rsplit("/", 1)[1])
    Item.objects.filter(study=study, url__endswith="/issues/1").update(
        body="See [the docs](/docs) and:\n\n```python\nimport torch\nprint(torch.cuda.is_available())\n```\n",
        tags=["pytorch"],
        created_at=datetime(2023, 5, 1, 8, 0, tzinfo=UTC),
    )
    made = {
        n: ItemFactory(study=study, url=f"https://stackoverflow.com/questions/{n}", title=f"Post {n}",
                       source=Source.STACKOVERFLOW, external_id=str(n))
        for n in (6, 7, 8, 9)
    }  # fmt: skip
    Item.objects.filter(pk=made[8].pk).update(
        body="<p>Hello <script>alert(1)</script><code>x = 1</code></p>",
        body_format="html",
        relevance="irrelevant",
        relevance_reason="off topic",
        screened_by=lead,
        metadata={"score": 3},
        raw={"question": {"id": 8}},
    )
    ItemComment.objects.create(item=made[8], position=1, body="*First*", body_format="markdown", author="c1")
    ItemComment.objects.create(
        item=made[8], position=2, body="<b>answer</b>", body_format="html", author="c2", is_answer=True,
        is_accepted=True, score=5, created_at=datetime(2023, 6, 1, tzinfo=UTC),
    )  # fmt: skip
    labeller = Labeller(study)
    # 6: a disagreement; 7: an agreement nobody decided (consolidation decides it on import).
    labeller.annotate(made[6], annotator_a, round1, [{"type": ["fault"], "symptom": ["hang"]}])
    labeller.annotate(made[6], annotator_b, round1, [{"type": ["howto"]}, {"type": ["howto"]}])
    labeller.annotate(made[7], annotator_a, round1, [{"type": ["howto"]}])
    labeller.annotate(made[7], annotator_b, round1, [{"type": ["howto"]}])
    oom = Category.objects.get(dimension__codebook__study=study, key="oom")
    hang = Category.objects.get(dimension__codebook__study=study, key="hang")
    merge_category(oom, hang, actor=lead)
    # 9: labels still on the merged category: they count as its target, so only `fix` disagrees.
    labeller.annotate(made[9], annotator_a, round2, [{"type": ["fault"], "symptom": ["oom"]}])
    labeller.annotate(
        made[9], annotator_b, round2, [{"type": ["fault"], "symptom": ["hang"], "fix": ["code"]}]
    )
    return study


def _value(value: Any) -> Any:
    if isinstance(value, datetime):
        return "recent" if value >= RECENT else value.isoformat()
    return value


class Rows:
    """Every row of a study's tables as text, foreign keys replaced by natural keys."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self.keys: dict[str, dict[int, Any]] = {
            "accounts_user": dict(User.objects.values_list("id", "username")),
            "accounts_study": {study.pk: "STUDY"},
        }
        self.lines: list[str] = []

    def add(self, queryset: QuerySet[Any], key: Any = None) -> None:
        model: type[Model] = queryset.model
        fields = [f for f in model._meta.concrete_fields if not f.primary_key]
        table = model._meta.db_table
        for row in queryset.order_by("id").values("id", *[f.attname for f in fields]):
            out = {}
            for f in fields:
                value = row[f.attname]
                if f.is_relation and value is not None:
                    assert f.related_model is not None
                    value = self.keys[f.related_model._meta.db_table][value]
                out[f.name] = _value(value)
            if key is not None:
                self.keys.setdefault(table, {})[row["id"]] = key(out)
            self.lines.append(f"{table} {json.dumps(out, sort_keys=True, default=str)}")

    def changes(self, changes: dict[str, Any]) -> dict[str, Any]:
        """A decision's `changes` with the annotation and annotator ids as natural keys."""
        annotations = self.keys["annotation_annotation"]
        return {
            **changes,
            "annotations": [
                {
                    **a,
                    "annotation": annotations[a["annotation"]],
                    "annotator_id": self.keys["accounts_user"][a["annotator_id"]],
                }
                for a in changes.get("annotations", [])
            ],
        }


def study_rows(study: Study) -> list[str]:
    rows = Rows(study)
    rows.add(Study.objects.filter(pk=study.pk).only("id"), key=lambda r: "STUDY")
    rows.lines[0] = rows.lines[0].replace(study.slug, "SLUG")
    rows.add(Membership.objects.filter(study=study))
    rows.add(Codebook.objects.filter(study=study), key=lambda r: "CODEBOOK")
    rows.keys["taxonomy_dimension"] = dict(
        Dimension.objects.filter(codebook__study=study).values_list("id", "key")
    )
    rows.keys["taxonomy_category"] = {
        pk: f"{dimension}/{key}"
        for pk, dimension, key in Category.objects.filter(dimension__codebook__study=study).values_list(
            "id", "dimension__key", "key"
        )
    }
    rows.add(Dimension.objects.filter(codebook__study=study))
    rows.add(Category.objects.filter(dimension__codebook__study=study))
    rows.add(CodebookVersion.objects.filter(codebook__study=study))
    rows.add(CodebookChange.objects.filter(codebook__study=study))
    rows.add(Item.objects.filter(study=study), key=lambda r: r["url"])
    rows.add(ItemComment.objects.filter(item__study=study))
    rows.add(Round.objects.filter(study=study), key=lambda r: r["number"])
    rows.add(RoundItem.objects.filter(round__study=study))
    rows.add(Assignment.objects.filter(study=study), key=lambda r: [r["round"], r["item"], r["annotator"]])
    rows.add(Annotation.objects.filter(assignment__study=study), key=lambda r: r["assignment"])
    rows.add(
        Finding.objects.filter(annotation__assignment__study=study),
        key=lambda r: [r["annotation"], r["number"]],
    )
    rows.add(LabelValue.objects.filter(finding__annotation__assignment__study=study))
    decisions = Decision.objects.filter(study=study)
    rows.keys["adjudication_decision"] = {
        pk: [url, current] for pk, url, current in decisions.values_list("id", "item__url", "is_current")
    }
    start = len(rows.lines)
    rows.add(decisions)
    for position, decision in enumerate(decisions.order_by("id"), start=start):
        table, text = rows.lines[position].split(" ", 1)
        row = json.loads(text)
        row["changes"] = rows.changes(decision.changes)
        rows.lines[position] = f"{table} {json.dumps(row, sort_keys=True, default=str)}"
    rows.add(
        DecisionFinding.objects.filter(decision__study=study), key=lambda r: [r["decision"], r["number"]]
    )
    rows.add(DecisionValue.objects.filter(finding__decision__study=study))
    start = len(rows.lines)
    rows.add(Decision.source_annotations.through.objects.filter(decision__study=study))
    rows.lines[start:] = sorted(rows.lines[start:])  # a set: the order of its rows means nothing
    rows.add(Review.objects.filter(study=study))
    return rows.lines


def test_a_restore_writes_the_rows_the_row_by_row_import_wrote(varied: Study, tmp_path: Path) -> None:
    build_package(varied, tmp_path / "varied.zip")
    copy = import_study("ddp-copy", tmp_path / "varied.zip").study
    rows = study_rows(copy)
    if os.environ.get("RESTORED_ROWS") == "write":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(rows, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    assert rows == json.loads(GOLDEN.read_text(encoding="utf-8"))


def test_the_varied_study_restores_every_review_state(varied: Study, tmp_path: Path) -> None:
    """What the golden rows hold, in words: the cases above each reach the state they should."""
    build_package(varied, tmp_path / "varied.zip")
    copy = import_study("ddp-copy", tmp_path / "varied.zip").study
    reviews = {
        url.rsplit("/", 1)[1]: (state, dimensions)
        for url, state, dimensions in Review.objects.filter(study=copy).values_list(
            "item__url", "state", "disagreeing_dimensions"
        )
    }
    assert reviews["6"] == ("disagreement", ["symptom", "type"])
    assert reviews["7"][0] == "decided"
    assert reviews["9"] == ("disagreement", ["fix"])
    assert reviews["4"] == ("annotating", [])
    made = Decision.objects.get(study=copy, item__url__endswith="/questions/7")
    assert made.provenance == Provenance.UNANIMOUS and made.source_annotations.count() == 2
    screened = Item.objects.get(study=copy, url__endswith="/questions/8")
    assert (screened.relevance, screened.relevance_reason, screened.screened_by) == (
        "irrelevant",
        "off topic",
        User.objects.get(username="lena"),
    )
    assert "<script" not in screened.body_html and screened.rendered_at is not None
    comments = list(ItemComment.objects.filter(item=screened).order_by("position"))
    assert [c.body_html for c in comments] == ["<p><em>First</em></p>\n", "<b>answer</b>"]
    assert comments[1].is_accepted and comments[1].score == 5


def test_texts_that_look_like_copy_syntax_come_back_unchanged(labelled: Study, tmp_path: Path) -> None:
    """Tabs, newlines, backslashes and ``\\N`` (NULL in PostgreSQL's COPY format) are just text."""
    tricky = "tab\there \\N\nback\\slash\r\n\\.\nend"
    item = Item.objects.get(study=labelled, url__endswith="/issues/1")
    Item.objects.filter(pk=item.pk).update(body=tricky, title="\\N", metadata={"note": tricky})
    ItemComment.objects.create(item=item, position=1, body=tricky, author="\\N")
    Annotation.objects.filter(assignment__item=item).update(memo=tricky)
    Decision.objects.filter(item=item).update(rationale=tricky)
    build_package(labelled, tmp_path / "p.zip")
    copy = import_study("ddp-copy", tmp_path / "p.zip").study
    restored = Item.objects.get(study=copy, url=item.url)
    assert (restored.body, restored.title, restored.metadata) == (tricky, "\\N", {"note": tricky})
    comment = ItemComment.objects.get(item=restored)
    assert (comment.body, comment.author) == (tricky, "\\N")
    assert set(Annotation.objects.filter(assignment__item=restored).values_list("memo", flat=True)) == {
        tricky
    }
    assert Decision.objects.get(item=restored).rationale == tricky
