"""A study's round phases, blind records, revisions, threads and causes of disagreement in the replication
package (``discussion.json``), and their restore by ``import_study``: the writer of these annotation tables.

`discussion_data` reads (keys and usernames, never ids); `restore_discussion` writes them into a study
that `import_study` has just created, its rounds, assignments and annotations already restored. A package
without ``discussion.json`` (built before round phases) restores every round blind, as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.utils import timezone

from apps.accounts.models import Study, User
from apps.taxonomy.models import Category

from ..models import (
    Annotation,
    Assignment,
    BlindRecord,
    BlindValue,
    Cause,
    Comment,
    CommentEdit,
    DisagreementCause,
    Revision,
    Round,
    RoundKind,
    RoundPhase,
    SendBack,
)
from ..writes import mark_assisted

FILE = "discussion.json"


def _iso(at: datetime | None) -> str | None:
    return at.isoformat() if at is not None else None


def _stamp(text: Any) -> datetime | None:
    return datetime.fromisoformat(text) if isinstance(text, str) and text else None


def _when(text: Any) -> datetime:
    """A timestamp the package must hold (now when it does not)."""
    return _stamp(text) or timezone.now()


def _edit(edit: CommentEdit) -> dict[str, Any]:
    return {"body": edit.body, "edited_at": _iso(edit.edited_at), "deleted": edit.deleted}


def discussion_data(study: Study) -> dict[str, Any]:
    """discussion.json: each round's phase and reveal, its blind record (labels as category keys),
    every revision, and every thread with its comments, mentions and edits."""
    rounds = [
        {"round": r.number, "phase": r.phase, "discussion": r.discussion, "revealed_at": _iso(r.revealed_at),
         "revealed_by": r.revealed_by.username if r.revealed_by else None, "kind": r.kind}
        for r in Round.objects.filter(study=study).select_related("revealed_by").order_by("number")
    ]  # fmt: skip
    blind = [
        {"round": b.round.number, "item": b.item.url, "annotator": b.annotator.username, "memo": b.memo,
         "labels": b.labels, "submitted_at": _iso(b.submitted_at), "frozen_at": _iso(b.frozen_at)}
        for b in BlindRecord.objects.filter(round__study=study).select_related("round", "item", "annotator")
        .order_by("round__number", "item__url", "annotator__username")
    ]  # fmt: skip
    revisions = [
        {"round": r.annotation.assignment.round.number, "item": r.annotation.assignment.item.url,
         "annotator": r.annotation.assignment.annotator.username, "revised_at": _iso(r.revised_at),
         "before": r.labels_before, "memo_before": r.memo_before, "after": r.labels_after,
         "memo_after": r.memo_after, "imported": r.imported}
        for r in Revision.objects.filter(annotation__assignment__study=study)
        .select_related("annotation__assignment__round", "annotation__assignment__item",
                        "annotation__assignment__annotator").order_by("revised_at", "id")
    ]  # fmt: skip
    comments = [
        {"round": c.round.number, "item": c.item.url, "author": c.author.username, "body": c.body,
         "body_html": c.body_html, "mentions": sorted(m.username for m in c.mentions.all()),
         "created_at": _iso(c.created_at), "edited_at": _iso(c.edited_at), "deleted_at": _iso(c.deleted_at),
         "edits": [_edit(e) for e in c.edits.all()]}
        for c in Comment.objects.filter(round__study=study).select_related("round", "item", "author")
        .prefetch_related("mentions", "edits").order_by("created_at", "id")
    ]  # fmt: skip
    causes = [
        {"key": c.key, "name": c.name, "position": c.position, "retired": c.retired}
        for c in Cause.objects.filter(study=study)
    ]
    disagreement_causes = [
        {"round": d.round.number, "item": d.item.url, "cause": d.cause.key, "note": d.note,
         "category": [d.category.dimension.key, d.category.key] if d.category else None,
         "set_by": d.set_by.username if d.set_by else None, "set_at": _iso(d.set_at)}
        for d in DisagreementCause.objects.filter(round__study=study)
        .select_related("round", "item", "cause", "category__dimension", "set_by")
        .order_by("round__number", "item__url")
    ]  # fmt: skip
    assisted = [
        {"round": r, "item": url, "annotator": name}
        for r, url, name in Annotation.objects.filter(assignment__study=study, suggestion_shown=True)
        .values_list("assignment__round__number", "assignment__item__url", "assignment__annotator__username")
        .order_by("assignment__round__number", "assignment__item__url", "assignment__annotator__username")
    ]  # fmt: skip
    send_backs = [
        {"round": s.assignment.round.number, "item": s.assignment.item.url,
         "annotator": s.assignment.annotator.username, "reason": s.reason, "labels_before": s.labels_before,
         "memo_before": s.memo_before, "codebook_version": s.codebook_version,
         "sent_by": s.sent_by.username if s.sent_by else None, "sent_at": _iso(s.sent_at)}
        for s in SendBack.objects.filter(assignment__study=study)
        .select_related("assignment__round", "assignment__item", "assignment__annotator", "sent_by")
        .order_by("sent_at", "id")
    ]  # fmt: skip
    return {"rounds": rounds, "blind_records": blind, "revisions": revisions, "comments": comments,
            "causes": causes, "disagreement_causes": disagreement_causes,
            "assisted": assisted, "send_backs": send_backs}  # fmt: skip


def usernames(data: Mapping[str, Any]) -> set[str]:
    """Every username discussion.json names (the restore creates the missing ones, like the others)."""
    names = {r["revealed_by"] for r in data.get("rounds", []) if r.get("revealed_by")}
    names |= {b["annotator"] for b in data.get("blind_records", [])}
    names |= {r["annotator"] for r in data.get("revisions", [])}
    for c in data.get("comments", []):
        names |= {c["author"], *c.get("mentions", [])}
    names |= {d["set_by"] for d in data.get("disagreement_causes", []) if d.get("set_by")}
    names |= {s["annotator"] for s in data.get("send_backs", [])}
    names |= {s["sent_by"] for s in data.get("send_backs", []) if s.get("sent_by")}
    return names


def restore_discussion(
    study: Study, data: Mapping[str, Any], item_ids: Mapping[str, int], users: Mapping[str, User]
) -> None:
    """Write discussion.json into the restored `study` (inside import_study's transaction)."""
    rounds = {r.number: r for r in Round.objects.filter(study=study)}
    for raw in data.get("rounds", []):
        round_ = rounds[raw["round"]]
        round_.phase = raw.get("phase") or RoundPhase.BLIND
        round_.discussion = raw.get("discussion")
        round_.revealed_at = _stamp(raw.get("revealed_at"))
        round_.revealed_by = users.get(raw.get("revealed_by") or "")
        round_.kind = raw.get("kind") or RoundKind.RELIABILITY
        round_.save(update_fields=["phase", "discussion", "revealed_at", "revealed_by", "kind"])
    assignments = {
        (a.round.number, a.item_id, a.annotator.username): a
        for a in Assignment.objects.filter(study=study).select_related("round", "annotator")
    }
    categories = {
        (d, k): pk
        for d, k, pk in Category.objects.filter(dimension__codebook__study=study).values_list(
            "dimension__key", "key", "pk"
        )
    }
    dimensions = dict(
        Category.objects.filter(dimension__codebook__study=study).values_list(
            "dimension__key", "dimension_id"
        )
    )
    for raw in data.get("blind_records", []):
        assignment = assignments[(raw["round"], item_ids[raw["item"]], raw["annotator"])]
        record = BlindRecord.objects.create(
            round=rounds[raw["round"]], assignment=assignment, item_id=assignment.item_id,
            annotator=users[raw["annotator"]], memo=raw.get("memo", ""), labels=raw["labels"],
            submitted_at=_stamp(raw.get("submitted_at")), frozen_at=_when(raw.get("frozen_at")),
        )  # fmt: skip
        BlindValue.objects.bulk_create(
            BlindValue(record=record, finding=number, dimension_id=dimensions[dim],
                       category_id=None if value == "pending" else categories[(dim, key)])
            for number, finding in enumerate(raw["labels"], start=1)
            for dim, value in finding.items()
            for key in (["pending"] if value == "pending" else value)
        )  # fmt: skip
    annotations = {a.assignment_id: a for a in Annotation.objects.filter(assignment__study=study)}
    mark_assisted(
        annotations[assignments[(raw["round"], item_ids[raw["item"]], raw["annotator"])].pk].pk
        for raw in data.get("assisted", [])
    )
    for raw in data.get("revisions", []):
        assignment = assignments[(raw["round"], item_ids[raw["item"]], raw["annotator"])]
        Revision.objects.create(
            annotation=annotations[assignment.pk], revised_at=_when(raw["revised_at"]),
            labels_before=raw["before"], memo_before=raw.get("memo_before", ""), labels_after=raw["after"],
            memo_after=raw.get("memo_after", ""), imported=bool(raw.get("imported")),
        )  # fmt: skip
    SendBack.objects.bulk_create(
        SendBack(
            assignment=assignments[(raw["round"], item_ids[raw["item"]], raw["annotator"])],
            reason=raw["reason"],
            labels_before=raw.get("labels_before", []),
            memo_before=raw.get("memo_before", ""),
            codebook_version=raw["codebook_version"],
            sent_by=users.get(raw.get("sent_by") or ""),
            sent_at=_when(raw["sent_at"]),
        )
        for raw in data.get("send_backs", [])
    )
    for raw in data.get("comments", []):
        comment = Comment.objects.create(
            round=rounds[raw["round"]], item_id=item_ids[raw["item"]], author=users[raw["author"]],
            body=raw["body"], body_html=raw.get("body_html", ""), created_at=_when(raw["created_at"]),
            edited_at=_stamp(raw.get("edited_at")), deleted_at=_stamp(raw.get("deleted_at")),
        )  # fmt: skip
        comment.mentions.set([users[name] for name in raw.get("mentions", [])])
        CommentEdit.objects.bulk_create(
            CommentEdit(
                comment=comment, body=e["body"], edited_at=_when(e["edited_at"]), deleted=e["deleted"]
            )
            for e in raw.get("edits", [])
        )
    _restore_causes(study, data, rounds, item_ids, users, categories)


def _restore_causes(
    study: Study,
    data: Mapping[str, Any],
    rounds: Mapping[int, Round],
    item_ids: Mapping[str, int],
    users: Mapping[str, User],
    categories: Mapping[tuple[str, str], int],
) -> None:
    """The study's causes and each disagreement's cause (packages before causes have neither)."""
    kinds = {
        raw["key"]: Cause.objects.create(
            study=study, key=raw["key"], name=raw["name"], position=raw.get("position", 0),
            retired=bool(raw.get("retired")),
        )
        for raw in data.get("causes", [])
    }  # fmt: skip
    DisagreementCause.objects.bulk_create(
        DisagreementCause(
            round=rounds[raw["round"]], item_id=item_ids[raw["item"]], cause=kinds[raw["cause"]],
            note=raw.get("note", ""), set_by=users.get(raw.get("set_by") or ""),
            set_at=_when(raw.get("set_at")),
            category_id=categories[tuple(raw["category"])] if raw.get("category") else None,
        )
        for raw in data.get("disagreement_causes", [])
    )  # fmt: skip
