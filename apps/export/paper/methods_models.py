"""The methods section's *Model raters*: which models labelled, how they agree with the annotators and the
final decisions, and the alternative-annotator test (Calderon, Reichart and Dror, 2025). Pure: no Django.

`ModelFacts` is one rater as the package's ``models/raters.json`` and ``models/agreement.json`` describe it
(read by `facts.model_facts`); `models_section` writes the paragraphs, each naming that file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .methods import Paragraph, Section

KIND_WORDS = {
    "openai": "a large language model",
    "baseline": "a local TF-IDF and linear SVM baseline",
    "imported": "labels imported from an external model",
}


@dataclass(frozen=True)
class ModelDimensionFacts:
    """One model on one dimension (all rounds): ``models/agreement.json``'s raters.NAME.DIMENSION."""

    dimension: str
    n: int
    alpha: float | None
    alpha_ci: tuple[float, float] | None
    accuracy: float | None
    accuracy_ci: tuple[float, float] | None
    n_gold: int
    macro_f1: float | None
    alt_test: Mapping[str, Any] | None
    """The ``alt_test`` object, or ``{"error": why}``."""


@dataclass(frozen=True)
class ModelFacts:
    name: str
    kind: str
    model: str
    model_ids: tuple[str, ...]
    temperature: float | None
    samples: int
    prompt_version: str
    answers: int
    dimensions: tuple[ModelDimensionFacts, ...] = ()
    error: str | None = None
    """Why the model could not be compared with the annotators at all."""


def _n(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def _ci(interval: tuple[float, float] | None) -> str:
    return f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""


def _describe(m: ModelFacts) -> str:
    what = KIND_WORDS.get(m.kind, m.kind)
    details = []
    if m.kind == "openai":
        model = ", ".join(f"`{i}`" for i in m.model_ids) or f"`{m.model}`"
        details.append(f"model {model}")
        if m.temperature is not None:
            details.append(f"temperature {m.temperature:g}")
        details.append(f"{m.samples} sample{'s' if m.samples != 1 else ''} per item")
        if m.prompt_version:
            details.append(f"prompt version {m.prompt_version}")
    details.append(f"{m.answers:,} answers")
    return f"*{m.name}* ({what}; {', '.join(details)})"


def _alt_test(result: Mapping[str, Any] | None) -> str:
    if not result:
        return ""
    if "error" in result:
        return f" The alternative-annotator test could not run: {result['error']}."
    if result.get("winning_rate") is None:
        return (
            f" The alternative-annotator test is undefined: {result.get('reason') or 'no item to compare'}."
        )
    annotators = len(result.get("annotators", []))
    verdict = "passed" if result.get("passed") else "did not pass"
    return (
        f" The alternative-annotator test (epsilon {result['epsilon']:g}, q {result['q']:g}, "
        f"{result.get('n_items', 0):,} items) gave a winning rate of "
        f"{result['winning_rate']:.3f} over {annotators} annotators: the model {verdict}"
        + (
            f" (advantage probability {result['advantage_probability']:.3f})."
            if result.get("advantage_probability") is not None
            else "."
        )
    )


def _dimension(m: ModelFacts, d: ModelDimensionFacts) -> str:
    text = (
        f"On *{d.dimension}*, Krippendorff's alpha of the annotators together with *{m.name}* was "
        f"{_n(d.alpha)}{_ci(d.alpha_ci)} (n = {d.n})"
    )
    if d.n_gold:
        text += (
            f"; against the final decisions its accuracy was {_n(d.accuracy)}{_ci(d.accuracy_ci)} "
            f"(n = {d.n_gold}, macro F1 {_n(d.macro_f1)})"
        )
    else:
        text += "; no item it labelled has a final decision yet"
    return text + "." + _alt_test(d.alt_test)


def models_section(models: Sequence[ModelFacts], people_labels_assisted: int = 0) -> Section | None:
    """The *Model raters* section, or None for a study without model raters."""
    if not models:
        return None
    intro = (
        f"Besides the annotators, {len(models)} model rater{'s' if len(models) != 1 else ''} labelled items "
        f"against the same codebook: {', '.join(_describe(m) for m in models)}. Model labels were never "
        "shown to annotators during blind labelling, and no model is compared with labels made while its "
        "suggestion was shown"
        + (f" ({people_labels_assisted:,} such labels were left out)" if people_labels_assisted else "")
        + ". Agreement is reported over all rounds, at full depth, with a 95% bootstrap interval for alpha "
        "and a Wilson interval for accuracy. Whether a model could take an annotator's place is judged by "
        "the alternative-annotator test (Calderon, Reichart and Dror, 2025): leaving out one annotator at "
        "a time, the model passes when it agrees with the others at least as well as the left-out annotator, "
        "within a margin epsilon, for enough of the annotators (a winning rate of at least 0.5)."
    )
    paragraphs = [Paragraph(intro, "models/raters.json")]
    for m in models:
        if m.error:
            text = f"*{m.name}* could not be compared with the annotators: {m.error}."
        else:
            text = " ".join(_dimension(m, d) for d in m.dimensions)
        if text:
            paragraphs.append(Paragraph(text, f"models/agreement.json ({m.name})"))
    return Section("models", "Model raters", tuple(paragraphs))
