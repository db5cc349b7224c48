from django.apps import AppConfig


class AdjudicationConfig(AppConfig):
    name = "apps.adjudication"
    label = "adjudication"

    def ready(self) -> None:
        from apps.annotation import decided, gold_answers, outcomes
        from apps.annotation.signals import annotation_submitted, items_moved
        from apps.raters import gold
        from apps.taxonomy import label_stores
        from apps.taxonomy.signals import categories_merged, labels_reassigned

        from . import outcomes as round_outcomes
        from . import readers, receivers

        decided.provide(readers.DECIDED)
        outcomes.provide(round_outcomes.discussion_outcome_data)
        gold.provide(readers.gold_by_item)
        gold_answers.provide(readers.gold_answers)
        label_stores.register(label_stores.GOLD, readers.GOLD_STORE)

        annotation_submitted.connect(
            receivers.on_annotation_submitted, dispatch_uid="adjudication-consolidate"
        )
        items_moved.connect(receivers.on_items_moved, dispatch_uid="adjudication-grid-progress")
        categories_merged.connect(receivers.on_categories_merged, dispatch_uid="adjudication-follow-merge")
        labels_reassigned.connect(receivers.on_labels_reassigned, dispatch_uid="adjudication-follow-split")
