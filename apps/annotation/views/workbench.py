"""The annotator's workbench: one item, its labels, drafts and submission (the queue is `queue.py`).

Another annotator's assignment is a 404 (`Assignment.objects.for_annotator`), and nothing here reads
another annotator's labels, except those of a decided item when the study reveals them. A refused
submission re-renders the page with status 422 (409 for a stale codebook, or an item whose labels are
final), the posted labels kept and the problems listed (docs/labelling.md, "Errors").
"""

from __future__ import annotations

import contextlib
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Exists, Q
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from apps.accounts.models import Study, User
from apps.accounts.permissions import access_study
from apps.core.context import study_context
from apps.core.http import HtmxHttpRequest
from apps.corpus.models import Item
from apps.corpus.services import ensure_rendered

from .. import payload as pl
from .. import services, suggestions
from ..forms import WorkbenchForm
from ..models import (
    Annotation,
    Assignment,
    AssignmentStatus,
    Round,
    RoundKind,
    SendBack,
)
from ..services import gold, send_back
from .common import labelling_page, request_user
from .discussion import discussion_context, readable
from .options import options_html

# --- The workbench -----------------------------------------------------------------------------------


class TrainingLocked(PermissionDenied):
    """A real round's item while a training round's pass mark still locks the study's real rounds for the
    user; the message says which training round and what score is missing (`gold.training_lock`)."""


def _pass_mark_rounds(request: HtmxHttpRequest, study: Study) -> Any:
    """The study's training rounds with a pass mark that give the user items (a queryset, not read)."""
    return Round.objects.filter(
        study=study,
        kind=RoundKind.TRAINING,
        pass_mark__isnull=False,
        assignments__annotator=request_user(request),
    )


def _own_assignment(request: HtmxHttpRequest, study: Study, pk: int) -> Assignment:
    """The user's assignment in the study (404 for anyone else's), refused with 403 while a training
    round's pass mark keeps the study's real rounds locked for them (`gold.training_lock`). Whether a
    training round with a pass mark concerns the user at all is read in the same query."""
    training = _pass_mark_rounds(request, study)
    assignment = get_object_or_404(
        Assignment.objects.for_annotator(request.user)
        .filter(study=study)
        .select_related("item", "round", "annotation")
        .annotate(in_training=Exists(training)),
        pk=pk,
    )
    if getattr(assignment, "in_training", False) and assignment.round.kind != RoundKind.TRAINING:
        reason = gold.training_lock(request_user(request), study)
        if reason is not None:
            raise TrainingLocked(reason)
    return assignment


def _annotation_of(assignment: Assignment) -> Annotation | None:
    try:
        return assignment.annotation
    except Annotation.DoesNotExist:
        return None


def _propose_url(study: Study) -> str | None:
    try:
        return reverse("taxonomy:propose", kwargs={"slug": study.slug})
    except NoReverseMatch:  # the codebook app may not offer proposals
        return None


def _dimensions_view(book: services.LoadedCodebook, user: User) -> list[dict[str, Any]]:
    """Each active dimension with the options the user may pick, for the template."""
    out = []
    for dimension in book.index.dimensions:
        schema_dim = book.schema.dimension(dimension.key)
        lineages = schema_dim.categories if schema_dim else {}
        options = []
        tree = book.index.tree(dimension.key, active_only=False)
        for category, depth in book.index.options(dimension.key, user.pk):
            info = lineages.get(category.key)
            path_names = book.index.path_names(category.id)
            options.append(
                {
                    "parent": bool(tree.children(category.id)),
                    "context": " > ".join(path_names[:-1]),
                    "key": category.key,
                    "name": category.name,
                    "depth": min(depth, 5),
                    "path": book.index.path(category.id),
                    "definition": category.definition,
                    "include": category.include,
                    "exclude": category.exclude,
                    "lineage": " ".join(info.lineage) if info else category.key,
                    "proposed": category.is_proposed,
                }
            )
        condition = ""
        if dimension.applies_when is not None:
            on_dim, on_cat = dimension.applies_when
            try:
                on = book.index.dimension(on_dim)
                on_name = book.index.category_by_key(on_dim, on_cat).name
                condition = f"{on.name} is {on_name}"
            except LookupError:
                condition = f"{on_dim} is {on_cat}"
        out.append(
            {
                "key": dimension.key,
                "name": dimension.name,
                "description": dimension.description,
                "multiple": dimension.multiple,
                "applies_dim": dimension.applies_when[0] if dimension.applies_when else "",
                "applies_cat": dimension.applies_when[1] if dimension.applies_when else "",
                "condition": condition,
                "options": options,
            }
        )
    return out


def _findings_view(
    dimensions: list[dict[str, Any]],
    selections: list[dict[str, pl.Value]],
    schema: pl.Schema,
    *,
    label: str | None = None,
) -> list[dict[str, Any]]:
    """Each finding's dimensions with their selection and option list; `label` numbers them instead
    (the blank finding the page clones, `__N__`)."""
    findings = []
    for index, values in enumerate(selections, start=1):
        number: int | str = label or index
        rows = []
        for dimension in dimensions:
            value = values.get(dimension["key"])
            info = schema.dimension(dimension["key"])
            applies = pl.applies(info, values, schema) if info else True
            selected = set(value) if isinstance(value, tuple) else set()
            inactive = _no_longer_offered(dimension, value, info)
            rows.append(
                {
                    "dim": dimension,
                    "pending": value == pl.PENDING,
                    "selected": selected,
                    "applies": applies is not False,
                    "inactive": inactive,
                    "options_html": options_html(number, dimension, selected, inactive),
                }
            )
        findings.append({"number": number, "dims": rows})
    return findings


def _no_longer_offered(
    dimension: dict[str, Any], value: pl.Value | None, info: pl.DimensionInfo | None
) -> list[dict[str, str]]:
    """The categories of `value` that the dimension no longer offers (retired, merged or rejected since
    the draft was saved), as options the page shows ticked and flagged instead of dropping them."""
    if not isinstance(value, tuple):
        return []
    offered = {o["key"] for o in dimension["options"]}
    known = info.categories if info is not None else {}
    out = []
    for key in value:
        if key in offered:
            continue
        category = known.get(key)
        if category is None:
            out.append(
                {"key": key, "name": key, "path": key, "lineage": key, "status": "not in the codebook"}
            )
            continue
        if category.status == pl.MERGED:
            target = known.get(category.merged_into or "")
            status = f"merged into {target.name}" if target else "merged"
        else:
            status = {pl.RETIRED: "retired", pl.REJECTED: "rejected"}.get(
                category.status, "not in the codebook"
            )
        names = [known[k].name if k in known else k for k in category.lineage]
        out.append(
            {
                "key": key,
                "name": category.name,
                "path": " > ".join(names),
                "lineage": " ".join(category.lineage),
                "status": status,
            }
        )
    return out


def _workbench_context(
    request: HtmxHttpRequest,
    study: Study,
    role: str,
    assignment: Assignment,
    *,
    posted: dict[str, Any] | None = None,
    errors: list[str | pl.Problem] | None = None,
    stale: bool = False,
) -> dict[str, Any]:
    user = request_user(request)
    book = services.load_codebook(study)
    item = ensure_rendered(assignment.item)
    annotation = _annotation_of(assignment)
    suggestion = suggestions.show_suggestion(assignment, annotation)
    if suggestion is not None and annotation is None:  # showing it created the annotation: read it
        annotation = Annotation.objects.filter(assignment=assignment).first()
    final, revealed, discussion = _standing(study, assignment, item, user, book)
    selections, memo = _shown_labels(posted, annotation, book)
    dimensions = _dimensions_view(book, user)
    findings = _findings_view(dimensions, selections, book.schema)
    return study_context(
        study,
        role,
        "queue",
        assignment=assignment,
        item=item,
        comments=item.comments.all(),
        annotation=annotation,
        submitted=annotation is not None and annotation.submitted_at is not None,
        has_draft=annotation is not None and bool(annotation.draft),
        final=final,
        dimensions=dimensions,
        findings=findings,
        no_longer=_no_longer(findings),
        blank=_findings_view(dimensions, [{}], book.schema, label="__N__")[0],
        meta=_meta_pairs(item),
        memo=memo,
        codebook_version=book.version,
        progress=_progress(user, assignment),
        errors=[_error_row(e, book.schema) for e in errors or []],
        stale=stale,
        revealed=revealed,
        **discussion,
        suggestion=suggestion,
        **_training(assignment, book),
        sent_back=_sent_back(assignment, annotation),
        propose_url=_propose_url(study),
        opened_at=int(timezone.now().timestamp()),
    )


def _training(assignment: Assignment, book: services.LoadedCodebook) -> dict[str, Any]:
    """Whether the item is a training round's, and its feedback once answered (no query otherwise)."""
    training = assignment.round.kind == RoundKind.TRAINING
    return {"training": training, "feedback": gold.feedback(assignment, book.index) if training else None}


def _sent_back(assignment: Assignment, annotation: Annotation | None) -> SendBack | None:
    """Why a lead sent the labels back, while they wait in a draft (no query for any other item)."""
    if annotation is None or annotation.submitted_at is not None or not annotation.draft:
        return None
    return send_back.open_send_back(assignment)


def _standing(
    study: Study, assignment: Assignment, item: Item, user: User, book: services.LoadedCodebook
) -> tuple[str | None, list[dict[str, Any]], dict[str, Any]]:
    """Why the labels are final (or None), the other annotators' labels a decided item reveals, and the
    round's discussion context (the reveal's side by side, whether the labels may be revised)."""
    # Final the same way whether an automatic decision followed or not: blind (services.final_reason).
    final = services.final_reason(assignment)
    # Only a study that reveals labels after a decision shows whether there was one.
    decided = final is not None and study.reveal_labels_after_decision
    decided = decided and bool(services.decided_item_ids([item.pk]))
    discussion = discussion_context(user, assignment, book)
    if discussion["revisable"]:
        final = (
            None  # in discussion the annotator's labels are theirs to revise (`services.revise_annotation`)
        )
    revealed = _revealed(item, user, book) if decided and discussion["side_by_side"] is None else []
    return final, revealed, discussion


def _progress(user: User, assignment: Assignment) -> dict[str, int]:
    """Done / total of the user's assignments in the assignment's round, and the percentage. Counted on
    columns of the `assignment_progress` index (annotator, round, status), not on `id`: an index-only
    scan, however large the round (4,000 assignments: 0.5 ms instead of 4-8 ms)."""
    progress = Assignment.objects.filter(annotator=user, round_id=assignment.round_id).aggregate(
        total=Count("round"), done=Count("status", filter=Q(status=AssignmentStatus.SUBMITTED))
    )
    percent = round(100 * progress["done"] / progress["total"]) if progress["total"] else 0
    return {**progress, "percent": percent}


def _no_longer(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chosen options the codebook no longer offers (retired or merged since), to be chosen again."""
    return [
        {"finding": f["number"], "dimension": d["dim"]["name"], "option": o}
        for f in findings
        for d in f["dims"]
        for o in d["inactive"]
    ]


def _shown_labels(
    posted: dict[str, Any] | None, annotation: Annotation | None, book: services.LoadedCodebook
) -> tuple[list[dict[str, pl.Value]], str]:
    """The labels and memo the form shows: what was just posted, else the draft, else the submission."""
    if posted is not None:
        return pl.selections(posted), str(posted.get("memo", ""))
    if annotation is not None and annotation.draft:
        return pl.selections(annotation.draft), str(annotation.draft.get("memo", ""))
    if annotation is not None and annotation.submitted_at is not None:
        return services.stored_labels(annotation, book) or [{}], annotation.memo
    return [{}], ""


def _revealed(item: Item, user: User, book: services.LoadedCodebook) -> list[dict[str, Any]]:
    """The other annotators' submitted labels of a decided item, for a study that reveals them after a
    decision; the caller has checked that it does and that the item is decided."""
    others = (
        Annotation.objects.submitted()
        .filter(assignment__item=item)
        .exclude(assignment__annotator=user)
        .select_related("assignment__annotator")
    )
    return [
        {
            "annotator": other.assignment.annotator,
            "findings": readable(services.stored_labels(other, book), book),
            "memo": other.memo,
        }
        for other in others
    ]


def _error_row(error: str | pl.Problem, schema: pl.Schema) -> dict[str, Any]:
    """One reason a submission was refused, in the codebook's names, with the finding and dimension it
    is about (workbench.js moves the focus to the first of them)."""
    if isinstance(error, str):
        return {"text": error, "finding": None, "dimension": None}
    known = error.dimension is not None and schema.dimension(error.dimension) is not None
    return {
        "text": error.in_names(schema),
        "finding": error.finding if known else None,
        "dimension": error.dimension if known else None,
    }


def _meta_pairs(item: Item) -> list[tuple[str, str]]:
    """A few of the item's metadata (repository, framework, state, ...) worth showing while labelling."""
    pairs = []
    for key, value in sorted((item.metadata or {}).items()):
        if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value).strip():
            pairs.append((key.replace("_", " "), str(value)[:80]))
    return pairs[:8]


def _refuse_locked(request: HtmxHttpRequest, study: Study, pk: int) -> None:
    """403 (PermissionDenied with the reason) for an assignment of a real round while a training round's
    pass mark locks the study's real rounds for the user (one query when none concerns them)."""
    training = _pass_mark_rounds(request, study)
    concerned = (
        Assignment.objects.for_annotator(request.user)
        .filter(pk=pk, study=study)
        .exclude(round__kind=RoundKind.TRAINING)
        .filter(Exists(training))
    )
    if concerned.exists() and (reason := gold.training_lock(request_user(request), study)) is not None:
        raise TrainingLocked(reason)


@labelling_page("GET")
def workbench(request: HtmxHttpRequest, study: Study, role: str, pk: int) -> HttpResponse:
    """One item and its labels: the screen an annotator works in (keyboard shortcuts in workbench.js)."""
    try:
        assignment = _own_assignment(request, study, pk)
    except TrainingLocked as locked:  # say it on the queue, where the training round waits (not a 403 page)
        messages.warning(request, str(locked))
        return redirect("annotation:queue", slug=study.slug)
    return render(request, "annotation/workbench.html", _workbench_context(request, study, role, assignment))


def _keep_draft(assignment: Assignment, user: User, data: dict[str, Any]) -> list[str]:
    """Save `data` as the draft after a refused submission; the reason when even that is refused."""
    try:
        services.save_draft(assignment, user, data)
    except services.AnnotationError as exc:
        return [str(exc)]
    return []


def _posted_payload(request: HtmxHttpRequest) -> dict[str, Any]:
    return pl.payload_from_form({name: request.POST.getlist(name) for name in request.POST})


@login_required
@require_POST
def save_draft(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """Autosave (debounced by htmx, and a beacon when the tab closes): the unsubmitted state."""
    study, _ = access_study(request.user, slug)
    assignment = _own_assignment(request, study, pk)
    try:
        saved = services.save_draft(assignment, request_user(request), _posted_payload(request))
    except services.AnnotationError as exc:
        return render(request, "annotation/workbench.html#draft-status", {"error": str(exc)}, status=422)
    ctx = {"saved_at": timezone.localtime() if saved is not None else None, "unchanged": saved is None}
    return render(request, "annotation/workbench.html#draft-status", ctx)


@labelling_page("POST")
def submit(request: HtmxHttpRequest, study: Study, role: str, pk: int) -> HttpResponse:
    """Submit the labels; on success go to the next open item (or stay, when asked), else show why.

    The service loads and locks the assignment, scoped to the user and the study (another's is a 404, as
    on every workbench URL); the page's full assignment (item, round, annotation) is read only to show a
    refused submission again. A refused submission keeps what was posted as the draft (its own
    transaction), so nothing is lost."""
    user = request_user(request)
    _refuse_locked(request, study, pk)
    form = WorkbenchForm(request.POST)
    data = _posted_payload(request)

    def refused(errors: list[str | pl.Problem], status: int, *, stale: bool = False) -> HttpResponse:
        assignment = _own_assignment(request, study, pk)
        ctx = _workbench_context(request, study, role, assignment, posted=data, errors=errors, stale=stale)
        return render(request, "annotation/workbench.html", ctx, status=status)

    if not form.is_valid():
        return refused([f"{name}: {' '.join(str(m) for m in e)}" for name, e in form.errors.items()], 422)
    seconds = form.cleaned_data.get("seconds")
    reference = Assignment(pk=pk)  # read for its pk only: the service loads the row under its lock
    try:
        services.check_draft_size(data)
        result = services.submit_annotation(
            reference,
            data,
            user,
            codebook_version=form.cleaned_data["codebook_version"],
            seconds_spent=seconds if seconds else None,
            study=study,
        )
    except services.NotYourAssignment as exc:
        raise Http404("No such assignment.") from exc
    except services.StaleCodebook as exc:
        return refused([str(exc), *_keep_draft(reference, user, data)], 409, stale=True)
    except services.InvalidLabels as exc:
        return refused([*exc.problems, *_keep_draft(reference, user, data)], 422)
    except services.AnnotationError as exc:
        return refused([str(exc), *_keep_draft(reference, user, data)], 409)
    except Exception:
        # Whatever failed was rolled back; keep what was posted if the database still answers.
        with contextlib.suppress(Exception):
            _keep_draft(reference, user, data)
        raise
    return _after_submit(
        request, study, user, reference, result, stay=form.cleaned_data.get("next") == "stay"
    )


def _after_submit(
    request: HtmxHttpRequest,
    study: Study,
    user: User,
    reference: Assignment,
    result: services.SubmitResult,
    *,
    stay: bool,
) -> HttpResponse:
    """Where a submission leads: the same item when asked, else the next open one, else the queue."""
    if not result.changed:
        messages.info(request, "These labels were already submitted; nothing changed.")
    if stay or result.training:  # a training item shows its gold answer after the submission
        return redirect("annotation:workbench", slug=study.slug, pk=reference.pk)
    following = result.next_assignment_id  # read by the submission itself on PostgreSQL's short path
    if following is None:
        after = services.next_open_assignment(user, study, after=reference)
        following = after.pk if after is not None else 0
    if not following:
        messages.success(request, "Submitted. Nothing left to label: your queue is empty.")
        return redirect("annotation:queue", slug=study.slug)
    return redirect("annotation:workbench", slug=study.slug, pk=following)
