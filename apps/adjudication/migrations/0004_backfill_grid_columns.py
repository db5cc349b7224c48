"""Fill the items grid's labelling columns (corpus 0009: round, progress, decision) of every item that
existed before them, with the rule of `apps/adjudication/progress.py` written against the historical
models: without it, a database migrated with rounds already drawn would show every item "Not in a round"
until its next change (`make run` on an existing demo, an upgraded server)."""

from django.db import migrations
from django.db.models import Case, Exists, OuterRef, Subquery, Value, When
from django.db.models.functions import Coalesce


def backfill(apps, schema_editor):  # type: ignore[no-untyped-def]
    Item = apps.get_model("corpus", "Item")
    RoundItem = apps.get_model("annotation", "RoundItem")
    Assignment = apps.get_model("annotation", "Assignment")
    Decision = apps.get_model("adjudication", "Decision")
    Review = apps.get_model("adjudication", "Review")
    rounds = RoundItem.objects.filter(item=OuterRef("pk"))
    current = Decision.objects.filter(item=OuterRef("pk"), is_current=True)
    assigned = Assignment.objects.filter(item=OuterRef("pk"))
    Item.objects.update(
        round_number=Coalesce(Subquery(rounds.order_by("-round__number").values("round__number")[:1]), Value(0)),
        progress=Case(
            When(Exists(current), then=Value("decided")),
            When(
                Exists(Review.objects.filter(item=OuterRef("pk"), state="disagreement")),
                then=Value("disagreement"),
            ),
            When(~Exists(rounds), then=Value("unsampled")),
            When(~Exists(assigned), then=Value("waiting")),
            When(Exists(assigned.filter(status="open")), then=Value("labelling")),
            default=Value("labelled"),
        ),
        decision=Coalesce(Subquery(current.order_by("-decided_at").values("provenance")[:1]), Value("")),
    )


class Migration(migrations.Migration):
    dependencies = [
        ("adjudication", "0003_decision_discussed"),
        ("annotation", "0008_gold_checks_training"),
        ("corpus", "0009_items_grid"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
