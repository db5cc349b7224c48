"""The methods section of a paper, from the study's own numbers: Markdown, LaTeX and BibTeX. Pure: no
Django.

`MethodsData` holds the facts (read by `facts.methods_data`); `sections` turns them into `Section`s of
`Paragraph`s, each paragraph naming the file its numbers come from (``source``), so that a reader can
trace every number to a table of the package. Other parts of the product add their own section by
appending to ``MethodsData.extra_sections`` (e.g. discussion outcomes, model raters): the renderers
place them before the figures, in order. `to_markdown`, `to_latex` and `BIBTEX` render; the LaTeX is
a complete document that pdflatex compiles (article class, booktabs, graphicx).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from apps.core.tables import latex_escape


@dataclass(frozen=True)
class Paragraph:
    """Text with inline emphasis only as ``*word*``; `source` is the file (and place) of its numbers."""

    text: str
    source: str = ""


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    paragraphs: tuple[Paragraph, ...]


@dataclass(frozen=True)
class RoundFacts:
    number: int
    name: str
    method: str
    size: int
    items: int
    annotators: int


@dataclass(frozen=True)
class AgreementFacts:
    """One dimension in one round (``round`` None: all rounds), from agreement.json."""

    dimension: str
    round: int | None
    n: int
    cohen_kappa: float | None
    fleiss_kappa: float | None
    alpha: float | None
    alpha_ci: tuple[float, float] | None
    ac1: float | None
    cohen_kappa_ci: tuple[float, float] | None = None
    ac1_ci: tuple[float, float] | None = None


@dataclass(frozen=True)
class SaturationFacts:
    dimension: str
    items: int
    codes: int
    base: int
    run: int
    threshold: float
    codes_in_base: int
    saturation_item: int | None


@dataclass(frozen=True)
class Artifact:
    """A figure or table of the paper folder: its file (without extension for figures) and caption."""

    path: str
    caption: str
    label: str


@dataclass(frozen=True)
class MethodsData:
    study: str
    items: int
    sources: tuple[tuple[str, int], ...]
    screening: tuple[tuple[str, int], ...]
    """Relevance → items (included, excluded, unscreened)."""
    exclusion_reasons: tuple[tuple[str, int], ...]
    rounds: tuple[RoundFacts, ...]
    annotators: tuple[str, ...]
    agreement: tuple[AgreementFacts, ...]
    bootstrap: int
    seed: int
    codebook_version: int
    dimensions: tuple[tuple[str, int], ...]
    """Dimension name → active categories."""
    changes: tuple[tuple[str, int], ...]
    """Kind of codebook change (as people read it) → how many."""
    saturation: tuple[SaturationFacts, ...]
    decisions: tuple[tuple[str, int], ...]
    """Provenance → current decisions."""
    findings: int
    figures: tuple[Artifact, ...] = ()
    tables: tuple[Artifact, ...] = ()
    extra_sections: tuple[Section, ...] = field(default_factory=tuple)


def _n(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def _count_list(pairs: Sequence[tuple[str, int]]) -> str:
    parts = [f"{count:,} {name}" for name, count in pairs]
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _round_name(r: RoundFacts) -> str:
    return f"round {r.number}" + (f" ({r.name})" if r.name else "")


def data_section(d: MethodsData) -> Section:
    paragraphs = [
        Paragraph(
            f"The corpus of *{d.study}* holds {d.items:,} items: {_count_list(d.sources) or 'none'}.",
            "items.jsonl",
        )
    ]
    if any(count for name, count in d.screening if name != "not screened"):
        text = f"Screening for relevance gave {_count_list(d.screening)} items."
        if d.exclusion_reasons:
            text += " Reasons for exclusion: " + _count_list(d.exclusion_reasons) + "."
        paragraphs.append(Paragraph(text, "items.jsonl (relevance, relevance_reason)"))
    return Section("data", "Data", tuple(paragraphs))


def labelling_section(d: MethodsData) -> Section:
    if not d.rounds:
        return Section(
            "labelling", "Labelling", (Paragraph("No labelling round has been drawn yet.", "sampling.json"),)
        )
    rounds = "; ".join(
        f"{_round_name(r)} drew {r.size:,} items ({r.method} sampling), of which {r.items:,} were labelled "
        f"by "
        f"{r.annotators} annotator{'s' if r.annotators != 1 else ''}"
        for r in d.rounds
    )
    text = (
        f"Labelling proceeded in {len(d.rounds)} round{'s' if len(d.rounds) != 1 else ''} by "
        f"{len(d.annotators)} annotator{'s' if len(d.annotators) != 1 else ''}, each labelling blind "
        f"(without seeing the others' labels) against the codebook: {rounds}."
    )
    return Section("labelling", "Labelling", (Paragraph(text, "sampling.json, annotations.csv"),))


def _ci(interval: tuple[float, float] | None) -> str:
    return f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else ""


def agreement_section(d: MethodsData) -> Section:
    conventions = Paragraph(
        "We report, per dimension and round, Cohen's kappa (defined for two annotators), Fleiss' kappa, "
        "Krippendorff's alpha (nominal) and Gwet's AC1, each with a 95% percentile bootstrap interval "
        f"({d.bootstrap:,} replicates of the items, seed {d.seed}), on the items rated by two or more "
        "annotators (n). A *pending* (undecided) label counts as a value of its own; a coefficient the data "
        "cannot define is reported as undefined with its reason.",
        "agreement.md",
    )
    paragraphs = [conventions]
    for dimension in dict.fromkeys(a.dimension for a in d.agreement):
        facts = [a for a in d.agreement if a.dimension == dimension and a.round is not None and a.n]
        if not facts:
            continue
        parts = []
        for a in facts:
            kappa, alpha = _n(a.cohen_kappa) + _ci(a.cohen_kappa_ci), _n(a.alpha) + _ci(a.alpha_ci)
            parts.append(
                f"in round {a.round} (n = {a.n}), Cohen's kappa was {kappa}, "
                f"Krippendorff's alpha {alpha} and Gwet's AC1 {_n(a.ac1)}{_ci(a.ac1_ci)}"
            )
        paragraphs.append(
            Paragraph(f"For *{dimension}*, " + "; ".join(parts) + ".", f"agreement.json ({dimension})")
        )
    return Section("agreement", "Inter-annotator agreement", tuple(paragraphs))


def codebook_section(d: MethodsData) -> Section:
    total = sum(count for _, count in d.dimensions)
    text = (
        f"The codebook (version {d.codebook_version}) has {len(d.dimensions)} dimension"
        f"{'s' if len(d.dimensions) != 1 else ''} and {total:,} active categories "
        f"({', '.join(f'{name}: {count}' for name, count in d.dimensions)})."
    )
    if d.changes:
        total_changes = sum(c for _, c in d.changes)
        text += f" After its first version it changed {total_changes:,} times: {_count_list(d.changes)}."
    paragraphs = [Paragraph(text, "codebook.json")]
    for s in d.saturation:
        reached = (
            f"reached at item {s.saturation_item}"
            if s.saturation_item is not None
            else "not reached on the items labelled so far"
        )
        paragraphs.append(
            Paragraph(
                f"Thematic saturation of *{s.dimension}* (Guest, Namey and Chen, 2020; "
                f"base {s.base} items with "
                f"{s.codes_in_base} categories, runs of {s.run}, threshold {s.threshold:.0%}) was {reached}; "
                f"{s.codes} categories were used on {s.items:,} items.",
                f"saturation ({s.dimension}), figures/saturation-*",
            )
        )
    return Section("codebook", "Codebook and saturation", tuple(paragraphs))


def adjudication_section(d: MethodsData) -> Section:
    if not d.decisions:
        return Section(
            "adjudication", "Adjudication", (Paragraph("No item has a decision yet.", "dataset.csv"),)
        )
    text = (
        f"{sum(c for _, c in d.decisions):,} items have a final decision ({d.findings:,} findings): "
        f"{_count_list(d.decisions)}."
    )
    return Section("adjudication", "Adjudication", (Paragraph(text, "dataset.csv (provenance)"),))


@dataclass(frozen=True)
class DiscussionFacts:
    """A revealed round: what its discussion resolved, the causes given, and kappa before and after."""

    round: int
    resolved: int
    adjudicated: int
    unresolved: int
    causes: tuple[tuple[str, int], ...]
    kappa: tuple[tuple[str, float | None, float | None], ...] = ()
    """(dimension, blind kappa, kappa after discussion)."""


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "0%"


def discussion_section(rounds: Sequence[DiscussionFacts]) -> Section | None:
    """Disagreements resolved by discussion and by the adjudicator, per revealed round (None without one)."""
    if not rounds:
        return None
    paragraphs = [
        Paragraph(
            "After blind labelling, a round was revealed: its blind labels were frozen, and its annotators "
            "saw each other's labels, discussed each disagreement and could revise their own labels; items "
            "whose revised labels agreed were decided as *discussed*, and a lead adjudicated the rest. "
            "Agreement is reported on the blind labels unless stated otherwise (negotiated agreement, "
            "Garrison et al. 2006).",
            "discussion.json",
        )
    ]
    for r in rounds:
        total = r.resolved + r.adjudicated + r.unresolved
        text = (
            f"In round {r.round}, discussion resolved {r.resolved} of {total} disagreements "
            f"({_percent(r.resolved, total)}), the adjudicator decided {r.adjudicated} "
            f"({_percent(r.adjudicated, total)})"
            + (f" and {r.unresolved} were still open" if r.unresolved else "")
            + "."
        )
        if r.causes:
            text += f" The causes given were {_count_list(r.causes)}."
        moved = [
            f"*{dimension}* from {_n(blind)} to {_n(after)}"
            for dimension, blind, after in r.kappa
            if after is not None
        ]
        if moved:
            text += f" Cohen's kappa after discussion went {_count_words(moved)}."
        paragraphs.append(Paragraph(text, f"agreement.json (round {r.round}: discussion, discussed)"))
    return Section("discussion", "Discussion of disagreements", tuple(paragraphs))


def _count_words(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def sections(d: MethodsData) -> list[Section]:
    """The sections in order: data, labelling, agreement, codebook, adjudication, then the extra ones."""
    return [
        data_section(d),
        labelling_section(d),
        agreement_section(d),
        codebook_section(d),
        adjudication_section(d),
        *d.extra_sections,
    ]


def to_markdown(d: MethodsData) -> str:
    lines = [
        f"# Methods: {d.study}",
        "",
        "Every paragraph names the file of the package its numbers come from.",
        "",
    ]
    for section in sections(d):
        lines += [f"## {section.title}", ""]
        for p in section.paragraphs:
            lines += [p.text, ""]
            if p.source:
                lines += [f"<small>Source: `{p.source}`</small>", ""]
    if d.figures:
        lines += ["## Figures", ""]
        lines += [f"![{f.caption}]({f.path}.svg)\n\n*{f.caption}*\n" for f in d.figures]
    if d.tables:
        lines += ["## Tables", ""]
        lines += [f"- [{t.caption}]({t.path}.md)" for t in d.tables]
        lines.append("")
    return "\n".join(lines)


def _tex_text(text: str) -> str:
    parts = latex_escape(text).split("*")
    return "".join(rf"\emph{{{part}}}" if n % 2 else part for n, part in enumerate(parts))


PREAMBLE = r"""\documentclass[10pt]{article}
\usepackage[utf8]{inputenc}
\usepackage[T1]{fontenc}
\usepackage{mathptmx}
\usepackage{booktabs}
\usepackage{graphicx}
\usepackage[margin=2.5cm]{geometry}
"""


CITATIONS = {
    "Guest, Namey and Chen, 2020": "guest2020",
    "Garrison et al. 2006": "garrison2006",
    "Calderon, Reichart and Dror, 2025": "calderon2025",
}
"""A phrase the sections write, and the entry of `BIBTEX` LaTeX cites after it."""


def to_latex(d: MethodsData, *, standalone: bool = True) -> str:
    """The section as LaTeX: a complete document (`standalone`) or its body to ``\\input``."""
    body = [r"\section{Methods}\label{sec:methods}"]
    for section in sections(d):
        body.append(rf"\subsection{{{latex_escape(section.title)}}}\label{{sec:methods-{section.key}}}")
        for p in section.paragraphs:
            text = _tex_text(p.text)
            for phrase, key in CITATIONS.items():
                text = text.replace(phrase, rf"{phrase}~\cite{{{key}}}")
            if section.key == "agreement" and p is section.paragraphs[0]:
                text += r" Coefficients follow \cite{cohen1960,fleiss1971,krippendorff2004,gwet2008}."
            body += [text, *([f"% Source: {p.source}"] if p.source else []), ""]
    for f in d.figures:
        body += [
            r"\begin{figure}[htbp]",
            r"\centering",
            rf"\includegraphics[width=\columnwidth]{{{f.path}.pdf}}",
            rf"\caption{{{latex_escape(f.caption)}}}\label{{{f.label}}}",
            r"\end{figure}",
            "",
        ]
    for t in d.tables:
        body += [rf"\input{{{t.path}.tex}}", ""]
    if not standalone:
        return "\n".join(body)
    return "\n".join(
        [
            PREAMBLE,
            rf"\title{{Methods: {latex_escape(d.study)}}}",
            r"\date{}",
            r"\begin{document}",
            r"\maketitle",
            *body,
            r"\bibliographystyle{plain}",
            r"\bibliography{references}",
            r"\end{document}",
            "",
        ]
    )


BIBTEX = r"""@article{guest2020,
  author  = {Guest, Greg and Namey, Emily and Chen, Mario},
  title   = {A simple method to assess and report thematic saturation in qualitative research},
  journal = {PLOS ONE},
  volume  = {15},
  number  = {5},
  pages   = {e0232076},
  year    = {2020},
  doi     = {10.1371/journal.pone.0232076}
}

@article{cohen1960,
  author  = {Cohen, Jacob},
  title   = {A coefficient of agreement for nominal scales},
  journal = {Educational and Psychological Measurement},
  volume  = {20},
  number  = {1},
  pages   = {37--46},
  year    = {1960},
  doi     = {10.1177/001316446002000104}
}

@article{fleiss1971,
  author  = {Fleiss, Joseph L.},
  title   = {Measuring nominal scale agreement among many raters},
  journal = {Psychological Bulletin},
  volume  = {76},
  number  = {5},
  pages   = {378--382},
  year    = {1971},
  doi     = {10.1037/h0031619}
}

@book{krippendorff2004,
  author    = {Krippendorff, Klaus},
  title     = {Content Analysis: An Introduction to Its Methodology},
  edition   = {2nd},
  publisher = {Sage},
  year      = {2004}
}

@article{gwet2008,
  author  = {Gwet, Kilem Li},
  title   = {Computing inter-rater reliability and its variance in the presence of high agreement},
  journal = {British Journal of Mathematical and Statistical Psychology},
  volume  = {61},
  number  = {1},
  pages   = {29--48},
  year    = {2008},
  doi     = {10.1348/000711006X126600}
}

@article{garrison2006,
  author  = {Garrison, D. R. and Cleveland-Innes, M. and Koole, Marguerite and Kappelman, James},
  title   = {Revisiting methodological issues in transcript analysis: Negotiated coding and reliability},
  journal = {The Internet and Higher Education},
  volume  = {9},
  number  = {1},
  pages   = {1--8},
  year    = {2006},
  doi     = {10.1016/j.iheduc.2005.11.001}
}

@inproceedings{calderon2025,
  author    = {Calderon, Nitay and Reichart, Roi and Dror, Rotem},
  title     = {The Alternative Annotator Test for {LLM}-as-a-Judge: How to Statistically Justify Replacing
               Human Annotators with {LLMs}},
  booktitle = {Proceedings of the 63rd Annual Meeting of the Association for Computational Linguistics},
  year      = {2025},
  note      = {arXiv:2501.10970}
}
"""
