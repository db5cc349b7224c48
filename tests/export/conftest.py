"""Studies to export: the TOSEM 2023 final sheet, and a small study with every kind of label.

`labelled` (study `ddp`, codebook v1): `type` (fault, how-to); `symptom` (only for faults: crash >
segfault, crash > oom, hang); `fix` (multiple: config, code, upgrade). Five items:

1. GitHub, round 1, alice and bob agree (fault / crash>segfault / config+code): unanimous decision;
2. Stack Overflow, round 1, they disagree; lena adjudicates (fault / hang / upgrade) with a rationale
   starting with ``=`` (a formula) and the title ``@SUM(A1)``;
3. GitHub, round 2, two findings, imported decision (the second finding a how-to);
4. GitHub, round 2, alice submitted with a *pending* symptom and a memo ``-1 looks odd``, bob's
   assignment still open: undecided;
5. Stack Overflow, no round, no labels.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from apps.accounts.models import Study, User
from apps.adjudication.models import Decision, DecisionFinding, DecisionValue, Provenance, Review, ReviewState
from apps.annotation.label_file import parse_labels_csv
from apps.annotation.models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    Finding,
    LabelValue,
    Round,
    RoundItem,
)
from apps.corpus.models import Item, Source
from apps.corpus.parsing import iter_records
from apps.corpus.services import upsert_records
from apps.taxonomy.loading import load_codebook_file
from apps.taxonomy.models import Category, Codebook, CodebookVersion, Dimension
from tests.factories import ItemFactory

ROOT = Path(__file__).resolve().parents[2]
TOSEM = ROOT / "fixtures" / "tosem23"


@pytest.fixture(autouse=True)
def export_root(settings: Any, tmp_path: Path) -> Path:
    root = tmp_path / "exports"
    settings.EXPORT_ROOT = root
    return root


def build_tosem_study(study: Study) -> Study:
    """The TOSEM 2023 final taxonomy: 1,070 posts, the codebook, 1,131 findings as imported decisions."""
    from apps.adjudication.services import import_decisions

    load_codebook_file(study, TOSEM / "codebook.json")
    upsert_records(study, iter_records(TOSEM / "final_items.csv"))
    rows = parse_labels_csv((TOSEM / "final_decisions.csv").read_text(encoding="utf-8"), decisions=True)
    import_decisions(study, rows)
    return study


@pytest.fixture
def tosem_study(study: Study) -> Study:
    return build_tosem_study(study)


def _at(day: int) -> datetime:
    return datetime(2024, 3, day, 12, 30, 15, 123456, tzinfo=UTC)


class Labeller:
    """Writes labels directly with the models (the export reads the models, not the workflows)."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self.categories = {
            (c.dimension.key, c.key): c for c in Category.objects.filter(dimension__codebook__study=study)
        }
        self.dimensions = {d.key: d for d in Dimension.objects.filter(codebook__study=study)}

    def values(self, finding_values: dict[str, Any]) -> list[tuple[Dimension, Category | None]]:
        out: list[tuple[Dimension, Category | None]] = []
        for key, chosen in finding_values.items():
            if chosen == "pending":
                out.append((self.dimensions[key], None))
            else:
                out.extend((self.dimensions[key], self.categories[(key, c)]) for c in chosen)
        return out

    def annotate(
        self, item: Item, user: User, round_: Round, findings: list[dict[str, Any]] | None, memo: str = ""
    ) -> Assignment:
        assignment = Assignment.objects.create(study=self.study, round=round_, item=item, annotator=user)
        RoundItem.objects.get_or_create(round=round_, item=item)
        if findings is None:
            return assignment
        annotation = Annotation.objects.create(assignment=assignment, memo=memo, submitted_at=_at(2))
        for number, values in enumerate(findings, start=1):
            finding = Finding.objects.create(annotation=annotation, number=number)
            for dimension, category in self.values(values):
                LabelValue.objects.create(
                    finding=finding, dimension=dimension, category=category, pending=category is None
                )
        assignment.status = AssignmentStatus.SUBMITTED
        assignment.submitted_at = _at(2)
        assignment.save()
        return assignment

    def decide(
        self,
        item: Item,
        findings: list[dict[str, Any]],
        provenance: str,
        *,
        round_: Round | None = None,
        by: User | None = None,
        rationale: str = "",
    ) -> Decision:
        decision = Decision.objects.create(
            study=self.study, item=item, round=round_, provenance=provenance, rationale=rationale,
            decided_by=by, decided_at=_at(5), codebook_version=1,
        )  # fmt: skip
        for number, values in enumerate(findings, start=1):
            finding = DecisionFinding.objects.create(decision=decision, number=number)
            for dimension, category in self.values(values):
                assert category is not None
                DecisionValue.objects.create(finding=finding, dimension=dimension, category=category)
        Review.objects.update_or_create(
            item=item, defaults={"study": self.study, "round": round_, "state": ReviewState.DECIDED}
        )
        return decision


def small_codebook(study: Study) -> Codebook:
    book = Codebook.objects.create(study=study, name="DDP faults", version=1)
    kind = Dimension.objects.create(codebook=book, key="type", name="Issue type", position=0)
    fault = Category.objects.create(dimension=kind, key="fault", name="Fault", position=0)
    Category.objects.create(dimension=kind, key="howto", name="How-to", position=1)
    symptom = Dimension.objects.create(
        codebook=book, key="symptom", name="Symptom", position=1, applies_when_category=fault
    )
    crash = Category.objects.create(dimension=symptom, key="crash", name="Crash", position=0)
    Category.objects.create(dimension=symptom, key="segfault", name="Segfault", parent=crash, position=0)
    Category.objects.create(dimension=symptom, key="oom", name="Out of memory", parent=crash, position=1)
    Category.objects.create(dimension=symptom, key="hang", name="Hang", position=1)
    fix = Dimension.objects.create(
        codebook=book, key="fix", name="Fix", multiple=True, position=2, applies_when_category=fault
    )
    for position, key in enumerate(["config", "code", "upgrade"]):
        Category.objects.create(dimension=fix, key=key, name=key.title(), position=position)
    from apps.taxonomy.index import CodebookIndex

    CodebookVersion.objects.create(
        codebook=book, number=1, snapshot=CodebookIndex.for_codebook(book).snapshot(), created_at=_at(1)
    )
    return book


@pytest.fixture
def labelled(study: Study, lead: User, annotator_a: User, annotator_b: User, owner: User) -> Study:
    small_codebook(study)
    labeller = Labeller(study)
    round1 = Round.objects.create(
        study=study, number=1, name="Pilot", seed=7, requested_size=2, created_at=_at(1)
    )
    round2 = Round.objects.create(study=study, number=2, seed=8, requested_size=2, created_at=_at(1))
    gh, so = (
        ("https://github.com/o/r/issues/", Source.GITHUB),
        ("https://stackoverflow.com/questions/", Source.STACKOVERFLOW),
    )
    items = [
        ItemFactory(study=study, url=f"{base}{n}", title=title, source=source)
        for n, title, (base, source) in [
            (1, "Segfault in allreduce", gh),
            (2, "@SUM(A1)", so),
            (3, "Two problems", gh),
            (4, "Hangs, maybe", gh),
            (5, "Unlabelled", so),
        ]
    ]
    one = [{"type": ["fault"], "symptom": ["segfault"], "fix": ["config", "code"]}]
    labeller.annotate(items[0], annotator_a, round1, one)
    labeller.annotate(items[0], annotator_b, round1, one)
    labeller.decide(items[0], one, Provenance.UNANIMOUS, round_=round1)
    labeller.annotate(
        items[1], annotator_a, round1, [{"type": ["fault"], "symptom": ["oom"], "fix": ["code"]}]
    )
    labeller.annotate(items[1], annotator_b, round1, [{"type": ["howto"]}], memo='=HYPERLINK("x")')
    labeller.decide(
        items[1], [{"type": ["fault"], "symptom": ["hang"], "fix": ["upgrade"]}], Provenance.ADJUDICATED,
        round_=round1, by=lead, rationale="=1+1 is how it reads, but it hangs",
    )  # fmt: skip
    labeller.decide(
        items[2],
        [{"type": ["fault"], "symptom": ["oom"], "fix": ["config"]}, {"type": ["howto"]}],
        Provenance.IMPORTED,
        round_=round2,
        by=owner,
    )
    labeller.annotate(
        items[3], annotator_a, round2, [{"type": ["fault"], "symptom": "pending"}], memo="-1 looks odd"
    )
    labeller.annotate(items[3], annotator_b, round2, None)
    RoundItem.objects.get_or_create(round=round2, item=items[2])
    return study


@pytest.fixture
def lead_client(client: Client, lead: User) -> Client:
    client.force_login(lead)
    return client
