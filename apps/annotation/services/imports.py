"""Importing annotators' labels from a labels file or a workbook (docs/design.md §5)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import Membership, Study, User
from apps.corpus.models import Item
from apps.corpus.records import canonical_url
from apps.taxonomy.models import CategoryStatus
from apps.taxonomy.tree import LabelError, UnknownLabelError

from .. import payload as pl
from ..label_file import LabelProblem, LabelRow
from ..models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    Round,
    RoundItem,
    SampleMethod,
)
from ..signals import annotation_submitted, items_moved
from ..writes import ImportedLabels, replace_imported_labels
from .common import (
    ImportLabelsError,
    LoadedCodebook,
    decided_item_ids,
    load_codebook,
    lock_study,
    stored_labels,
)
from .discussion import apply_revisions


@dataclass
class ImportLabelsResult:
    """What `import_annotations` did. Re-importing the same file gives zeros except `unchanged`."""

    rows: int = 0
    annotations_created: int = 0
    annotations_updated: int = 0
    unchanged: int = 0
    assignments_created: int = 0
    rounds_created: list[int] = field(default_factory=list)
    extra: int = 0  # annotations accepted beyond their round's overlap (``allow_extra``)

    def summary(self) -> str:
        rounds = (
            f"; created round(s) {', '.join(map(str, self.rounds_created))}" if self.rounds_created else ""
        )
        extra = (
            f"; {self.extra} annotation(s) beyond the round's overlap accepted (--allow-extra)"
            if self.extra
            else ""
        )
        return (
            f"{self.annotations_created} annotations created, {self.annotations_updated} updated, "
            f"{self.unchanged} unchanged ({self.assignments_created} assignments created){rounds}{extra}."
        )


@dataclass
class _Group:
    """The labels of one (item, annotator, round) gathered from the file."""

    item_id: int
    user: User
    round_number: int | None
    item_url: str = ""
    findings: dict[int, LabelRow] = field(default_factory=dict)
    memo_parts: list[str] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)


def _lookup_items(study: Study, texts: Iterable[str]) -> tuple[dict[str, int], dict[str, str]]:
    """Item id per URL as written, and a problem per URL that is not a URL of the study."""
    wanted: dict[str, set[str]] = {}
    problems: dict[str, str] = {}
    for text in texts:
        spellings = {text}
        try:
            spellings.add(canonical_url(text))
        except ValueError:
            problems[text] = "not an absolute http(s) URL"
            continue
        wanted[text] = spellings
    everything = sorted({s for spellings in wanted.values() for s in spellings})
    found: dict[str, int] = {}
    for start in range(0, len(everything), 500):
        chunk = everything[start : start + 500]
        found.update(Item.objects.filter(study=study, url__in=chunk).values_list("url", "pk"))
    ids: dict[str, int] = {}
    for text, spellings in wanted.items():
        hit = next((found[s] for s in sorted(spellings) if s in found), None)
        if hit is None:
            problems[text] = f"no item of study {study.slug} has this URL"
        else:
            ids[text] = hit
    return ids, problems


def _resolve_label(book: LoadedCodebook, dimension: str, text: str) -> tuple[str, str | None] | str:
    """(category key, original key before a merge or None), or a problem message. Names and paths are
    looked up among the active categories first, then among all (a file may name a retired category)."""
    try:
        try:
            category_id = book.index.resolve(dimension, text)
        except UnknownLabelError as unknown:
            try:
                category_id = book.index.resolve(dimension, text, active_only=False)
            except LabelError:
                raise unknown from None
    except LabelError as exc:
        return str(exc)
    info = book.index.categories[category_id]
    if info.status in (CategoryStatus.PROPOSED, CategoryStatus.REJECTED):
        return f"{book.index.path(category_id)!r} is a {info.status} code, not a codebook category"
    original: str | None = None
    seen = {category_id}
    while info.status == CategoryStatus.MERGED:
        target = info.merged_into_id
        if target is None or target not in book.index.categories or target in seen:
            return f"{book.index.path(category_id)!r} was merged into a category that cannot be found"
        original = original or info.key
        seen.add(target)
        info = book.index.categories[target]
    return info.key, original


def import_annotations(
    study: Study,
    rows: Sequence[LabelRow],
    *,
    actor: User | None = None,
    round_number: int | None = None,
    allow_extra: bool = False,
    complete: bool = True,
    revisions: bool = False,
) -> ImportLabelsResult:
    """Store annotators' labels read from a labels file (`label_file.parse_labels_csv`) or a workbook.

    All or nothing, in one transaction. Every problem is collected before anything is written and raised
    together (ImportLabelsError, by row): an item URL that is not in the study, a username that is no
    member, an unknown dimension, a label that names no category (with close matches) or several (with
    the candidates), a proposed code, values that break the codebook rules (`payload.validate_payload`,
    retired categories allowed: they are history; a merged category is stored as its target with the
    original kept), a change to labels submitted in the workbench or to a decided item.

    Labels go to the round named in the file, else to `round_number` (``--round``), either created with
    method ``imported`` if missing; without a round, to the round where the annotator already has the item,
    else the latest round holding the item; a label for an item in no round is refused (never put into a
    new round unasked). Every applicable dimension needs a value (a category or ``pending``), as in the
    workbench and the API; ``complete=False`` is for published historical labels only (the TOSEM 2023
    workbooks, whose annotators left some cells blank: their agreement is computed as recorded). A label
    by one annotator more than the round's overlap (as assigned, else the study's) is refused unless
    `allow_extra`, which accepts and counts it. Assignments are created as submitted, annotations with
    ``imported=True``; finding numbers order the findings (gaps are closed). An annotation whose labels
    and memo are already stored is left alone, so importing the same file twice changes nothing. Each
    created or changed annotation sends `annotation_submitted`, as a browser submission does.

    With `revisions` (``import_labels --phase discussed``) the rows revise labels already submitted in a
    revealed round's discussion (`discussion.revise_annotation`, each refusal named by its row).
    """
    result = ImportLabelsResult(rows=sum(len(r.rows) for r in rows))
    problems: list[LabelProblem] = []
    with transaction.atomic():
        lock_study(study)
        book = load_codebook(study)
        if not book.index.dimensions:
            raise ImportLabelsError(
                [LabelProblem(0, "codebook", "", f"study {study.slug} has no codebook yet")]
            )
        item_ids, item_problems = _lookup_items(study, {r.item for r in rows})
        names = {r.annotator for r in rows if r.annotator}
        users = {u.username: u for u in User.objects.filter(username__in=names)}
        members = set(
            Membership.objects.filter(study=study, user__username__in=names).values_list(
                "user__username", flat=True
            )
        )
        groups: dict[tuple[int, int, int | None], _Group] = {}
        resolved: dict[tuple[str, str], tuple[str, str | None] | str] = {}
        bad_annotators: dict[str, list[int]] = {}
        for label_row in rows:
            before = len(problems)
            usable = _check_row(label_row, study, item_problems, users, members, problems, bad_annotators)
            for label in label_row.labels:
                if label.dimension not in book.dimension_ids:
                    problems.append(
                        LabelProblem(label.row, "dimension", label.dimension,
                                     f"no such dimension (known: {', '.join(book.dimension_ids)})")
                    )  # fmt: skip
                elif not label.pending:
                    if (label.dimension, label.text) not in resolved:
                        resolved[label.dimension, label.text] = _resolve_label(
                            book, label.dimension, label.text
                        )
                    outcome = resolved[label.dimension, label.text]
                    if isinstance(outcome, str):
                        problems.append(LabelProblem(label.row, "label", label.text, outcome))
            if not usable or len(problems) > before:
                continue
            user = users[label_row.annotator]
            item_id = item_ids[label_row.item]
            number = label_row.round if label_row.round is not None else round_number
            group = groups.setdefault(
                (item_id, user.pk, number), _Group(item_id, user, number, label_row.item)
            )
            merged = group.findings.get(label_row.finding)
            if merged is None:
                group.findings[label_row.finding] = LabelRow(
                    label_row.item, label_row.annotator, label_row.finding, label_row.round,
                    label_row.memo, list(label_row.labels), list(label_row.rows),
                )  # fmt: skip
            else:
                merged.labels.extend(label_row.labels)
                merged.rows.extend(label_row.rows)
            for memo in label_row.memo.split("\n\n"):
                if memo.strip() and memo.strip() not in group.memo_parts:
                    group.memo_parts.append(memo.strip())
            group.rows.extend(label_row.rows)
        problems.extend(_annotator_problems(study, users, bad_annotators))
        planned = _plan_import(book, groups, resolved, problems, complete)
        if problems:
            raise ImportLabelsError(problems)
        if revisions:
            revised = [
                (
                    p.group.item_id,
                    p.group.user,
                    p.group.round_number,
                    p.group.rows,
                    pl.Payload(tuple(p.findings), p.memo),
                )
                for p in planned
            ]
            apply_revisions(study, revised, result)
        else:
            _apply_import(study, book, planned, result, actor, allow_extra)
    return result


def _check_row(
    label_row: LabelRow,
    study: Study,
    item_problems: Mapping[str, str],
    users: Mapping[str, User],
    members: set[str],
    problems: list[LabelProblem],
    bad_annotators: dict[str, list[int]],
) -> bool:
    """Whether the row's item and annotator are usable. A bad annotator is reported once, after the
    loop (`_annotator_problems`), not on each of their rows."""
    row = label_row.first_row
    ok = True
    if label_row.item in item_problems:
        problems.append(LabelProblem(row, "item", label_row.item, item_problems[label_row.item]))
        ok = False
    if not label_row.annotator:
        problems.append(
            LabelProblem(row, "annotator", "", "empty: gold decisions are imported with --decisions")
        )
        ok = False
    elif label_row.annotator not in users or label_row.annotator not in members:
        bad_annotators.setdefault(label_row.annotator, []).extend(label_row.rows or [row])
        ok = False
    return ok


def _annotator_problems(
    study: Study, users: Mapping[str, User], bad_annotators: Mapping[str, list[int]]
) -> list[LabelProblem]:
    out = []
    for name, rows in bad_annotators.items():
        why = "no such user" if name not in users else f"not a member of study {study.slug}"
        listed = ", ".join(map(str, rows[:5])) + (", ..." if len(rows) > 5 else "")
        count = f"{len(rows)} row{'s' if len(rows) != 1 else ''}"
        out.append(LabelProblem(rows[0], "annotator", name, f"{why} ({count}: {listed})"))
    return out


@dataclass
class _Planned:
    group: _Group
    findings: list[Mapping[str, pl.Value]]
    memo: str
    originals: dict[tuple[int, str, str], str]  # (finding number, dimension, key) → original key


def _plan_import(
    book: LoadedCodebook,
    groups: Mapping[tuple[int, int, int | None], _Group],
    resolved: Mapping[tuple[str, str], tuple[str, str | None] | str],
    problems: list[LabelProblem],
    complete: bool,
) -> list[_Planned]:
    """Each group's findings as a validated payload (problems mapped back to rows)."""
    planned: list[_Planned] = []
    for group in groups.values():
        numbers = sorted(group.findings)
        findings_raw: list[dict[str, Any]] = []
        originals: dict[tuple[int, str, str], str] = {}
        for index, number in enumerate(numbers, start=1):
            values: dict[str, Any] = {}
            for label in group.findings[number].labels:
                if label.pending:
                    values[label.dimension] = pl.PENDING
                    continue
                outcome = resolved[label.dimension, label.text]
                assert isinstance(outcome, tuple)  # unresolved labels were refused before
                key, original = outcome
                chosen = values.setdefault(label.dimension, [])
                if isinstance(chosen, list) and key not in chosen:
                    chosen.append(key)
                if original:
                    originals[(index, label.dimension, key)] = original
            findings_raw.append({"values": values})
        try:
            clean = pl.validate_payload(
                pl.parse_payload({"findings": findings_raw, "memo": "\n\n".join(group.memo_parts)}),
                book.schema,
                complete=complete,  # as the workbench and the API: no applicable dimension left empty
                allow_inactive=True,
            )
        except pl.PayloadError as exc:
            found = [_row_problem(group, numbers, problem) for problem in exc.problems]
            # A finding with a wrong label gets that error alone, not also "left empty" for the dimensions
            # that its wrong value happens to make applicable.
            wrong = {p.finding for p, f in zip(exc.problems, found, strict=True) if f.field != "dimension"}
            problems.extend(
                f
                for p, f in zip(exc.problems, found, strict=True)
                if f.field != "dimension" or p.finding not in wrong
            )
            continue
        planned.append(_Planned(group, list(clean.findings), clean.memo, originals))
    return planned


def _row_problem(group: _Group, numbers: Sequence[int], problem: pl.Problem) -> LabelProblem:
    """A payload problem told by the file's row (the label's row when the dimension is known)."""
    label_row = group.findings[numbers[problem.finding - 1]] if problem.finding else None
    row = label_row.first_row if label_row else (group.rows[0] if group.rows else 0)
    if label_row is not None and problem.dimension:
        row = next((lb.row for lb in label_row.labels if lb.dimension == problem.dimension), row)
    where = f"finding {numbers[problem.finding - 1]}" if problem.finding else ""
    dim = f"dimension {problem.dimension!r}" if problem.dimension else ""
    item = f"item {label_row.item}" if label_row is not None else ""
    prefix = ", ".join(p for p in (item, where, dim) if p)
    message = f"{prefix}: {problem.message}" if prefix else problem.message
    if (
        problem.dimension
        and label_row is not None
        and all(lb.dimension != problem.dimension for lb in label_row.labels)
    ):  # an applicable dimension the file leaves empty: no row of its own to point at
        where_item = ", ".join(p for p in (item, where) if p)
        message = (
            f"{where_item}: the dimension applies to this finding but has no label; "
            "add a row with its label or 'pending'"
        )
        return LabelProblem(row, "dimension", problem.dimension, message)
    return LabelProblem(row, "label", problem.value or "", message)


def _apply_import(
    study: Study,
    book: LoadedCodebook,
    planned: list[_Planned],
    result: ImportLabelsResult,
    actor: User | None,
    allow_extra: bool,
) -> None:
    item_ids = {p.group.item_id for p in planned}
    rounds = {r.number: r for r in Round.objects.filter(study=study)}
    for number in sorted({p.group.round_number for p in planned if p.group.round_number is not None}):
        if number not in rounds:
            rounds[number] = Round.objects.create(
                study=study, number=number, name=f"Imported round {number}", method=SampleMethod.IMPORTED,
                created_by=actor,
            )  # fmt: skip
            result.rounds_created.append(number)
    existing = {
        (a.round_id, a.item_id, a.annotator_id): a
        for a in Assignment.objects.filter(study=study, item_id__in=item_ids).select_related(
            "round", "annotator"
        )
    }
    round_of_item: dict[int, Round] = {}
    for round_item in (
        RoundItem.objects.filter(item_id__in=item_ids).select_related("round").order_by("round__number")
    ):
        round_of_item[round_item.item_id] = round_item.round
    decided = decided_item_ids(item_ids)
    annotations = {
        a.assignment_id: a for a in Annotation.objects.filter(assignment__in=list(existing.values()))
    }
    problems: list[LabelProblem] = []
    writes: list[tuple[Assignment, Annotation | None, _Planned]] = []
    for plan in planned:
        group = plan.group
        if group.round_number is not None:
            round_ = rounds[group.round_number]
        else:
            mine = [
                a
                for (_, item, user), a in existing.items()
                if item == group.item_id and user == group.user.pk
            ]
            if mine:
                round_ = max(mine, key=lambda a: a.round.number).round
            elif group.item_id in round_of_item:
                round_ = round_of_item[group.item_id]
            else:
                problems.append(
                    LabelProblem(
                        group.rows[0] if group.rows else 0,
                        "round",
                        "",
                        f"item {group.item_url} is in no round; say which in a 'round' column or with "
                        "--round N",
                    )
                )
                continue
        assignment = existing.get((round_.pk, group.item_id, group.user.pk))
        annotation = annotations.get(assignment.pk) if assignment else None
        if annotation is not None and annotation.submitted_at is not None:
            stored = pl.normal_form(stored_labels(annotation, book), annotation.memo)
            if stored == pl.normal_form(plan.findings, plan.memo):
                result.unchanged += 1
                continue
            row = group.rows[0] if group.rows else 0
            if not annotation.imported:
                problems.append(
                    LabelProblem(
                        row,
                        "annotator",
                        group.user.username,
                        f"already submitted other labels for this item in {round_} in the workbench; "
                        "an import does not overwrite them",
                    )
                )
                continue
            if group.item_id in decided:
                problems.append(
                    LabelProblem(
                        row, "item", "", f"the item is decided; {group.user.username}'s labels cannot change"
                    )
                )
                continue
        writes.append(
            (
                assignment
                or Assignment(study=study, round=round_, item_id=group.item_id, annotator=group.user),
                annotation,
                plan,
            )
        )
    problems.extend(_beyond_overlap(study, existing.values(), writes, result, allow_extra))
    if problems:
        raise ImportLabelsError(problems)
    _ensure_round_items({(a.round_id or a.round.pk, a.item_id) for a, _, _ in writes})
    now = timezone.now()
    new_assignments = [a for a, _, _ in writes if a.pk is None]
    for assignment in new_assignments:
        assignment.round_id = assignment.round.pk
        assignment.status = AssignmentStatus.SUBMITTED
        assignment.submitted_at = now
    Assignment.objects.bulk_create(new_assignments)
    if any(a.pk is None for a in new_assignments):
        lookup = {
            (a.round_id, a.item_id, a.annotator_id): a.pk
            for a in Assignment.objects.filter(study=study, item_id__in=item_ids)
        }
        for assignment in new_assignments:
            assignment.pk = lookup[(assignment.round_id, assignment.item_id, assignment.annotator_id)]
    result.assignments_created = len(new_assignments)
    Assignment.objects.filter(
        pk__in=[a.pk for a, _, _ in writes if a.status != AssignmentStatus.SUBMITTED]
    ).update(status=AssignmentStatus.SUBMITTED, submitted_at=now)
    to_write: list[ImportedLabels] = []
    for assignment, annotation, plan in writes:
        if annotation is None:
            annotation = Annotation(assignment=assignment, started_at=now)
            result.annotations_created += 1
        elif annotation.submitted_at is None:
            result.annotations_created += 1
        else:
            result.annotations_updated += 1
        annotation.memo = plan.memo
        annotation.draft = {}
        annotation.codebook_version = book.version
        annotation.submitted_at = annotation.submitted_at or now
        annotation.updated_at = now
        annotation.imported = True
        to_write.append((annotation, plan.findings, plan.originals))
    replace_imported_labels(to_write, book)
    for annotation, _, _ in to_write:
        annotation_submitted.send(
            sender=Annotation, annotation=annotation, item_id=annotation.assignment.item_id
        )
    items_moved.send(sender=Annotation, item_ids=list(item_ids))


def _beyond_overlap(
    study: Study,
    existing: Iterable[Assignment],
    writes: Sequence[tuple[Assignment, Annotation | None, _Planned]],
    result: ImportLabelsResult,
    allow_extra: bool,
) -> list[LabelProblem]:
    """A problem for each new annotator of an item past its round's overlap (the annotators it has
    already count first, then the file's in file order); with `allow_extra`, none, and they are counted."""
    annotators: dict[tuple[int, int], list[str]] = defaultdict(list)
    for assignment in existing:
        annotators[(assignment.round.pk, assignment.item_id)].append(assignment.annotator.username)
    problems: list[LabelProblem] = []
    for assignment, _, plan in sorted(writes, key=lambda w: w[2].group.rows[0] if w[2].group.rows else 0):
        if assignment.pk is not None:
            continue
        round_ = assignment.round
        names = annotators[(round_.pk, assignment.item_id)]
        overlap = round_.assigned_overlap or study.overlap
        if len(names) >= overlap:
            if allow_extra:
                result.extra += 1
            else:
                problems.append(
                    LabelProblem(
                        plan.group.rows[0] if plan.group.rows else 0,
                        "annotator",
                        plan.group.user.username,
                        f"item {plan.group.item_url} in {round_} already has {len(names)} annotator(s) "
                        f"({', '.join(names)}), the round's overlap of {overlap}; one more is refused "
                        "(--allow-extra accepts it)",
                    )
                )
        names.append(plan.group.user.username)
    return problems


def _ensure_round_items(pairs: set[tuple[int, int]]) -> None:
    if not pairs:
        return
    round_ids = {r for r, _ in pairs}
    present = set(RoundItem.objects.filter(round_id__in=round_ids).values_list("round_id", "item_id"))
    tops: dict[int, int] = defaultdict(lambda: -1)
    for round_id, position in RoundItem.objects.filter(round_id__in=round_ids).values_list(
        "round_id", "position"
    ):
        tops[round_id] = max(tops[round_id], position)
    new: list[RoundItem] = []
    for round_id, item_id in sorted(pairs - present):
        tops[round_id] += 1
        new.append(RoundItem(round_id=round_id, item_id=item_id, position=tops[round_id]))
    RoundItem.objects.bulk_create(new)


# --- Reads for the pages ------------------------------------------------------------------------------
