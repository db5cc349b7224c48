"""``agreement``: inter-rater agreement of a ratings file or of a study (docs/design.md §4, §6).

    agreement --ratings FILE.csv [--multi] [--categories a,b,c] [--bootstrap B --seed S] --format json|text
    agreement STUDY [--dimension KEY] [--round N] [--level DEPTH] [--phase blind|discussed]
        [--bootstrap B --seed S] [--raters A,B,...] [--alt-test RATER [--epsilon 0.2] [--q 0.05]]
        [--include-assisted] --format json|text

``--raters`` takes annotators' usernames and model raters' names alike (``NAME#k``: sample k of a model);
with a model among them, each report adds ``gold`` (each model against the decisions) and leaves out
people's labels made with a model's suggestion shown (``--include-assisted`` keeps them).
``--alt-test`` adds the alternative-annotator test of a model rater (`apps.raters.alt_test`).

Bad input (an unreadable or malformed ratings file, one annotator only, an unknown study, dimension or
round, options of the other form) ends with a message naming the problem and exit status 2. The study form
records its computation as an `AgreementSnapshot`, like the dashboard does, and prints progress to stderr.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.agreement.metrics import MAX_BOOTSTRAP, agreement_report
from apps.agreement.ratings import BLIND, PHASES
from apps.agreement.ratings_csv import RatingsFileError, parse_ratings
from apps.agreement.services import RatingsError, command_snapshot
from apps.core.cli import BaseCommand, positive_int, whole_number
from apps.core.commands import input_file
from apps.raters.alt_test import DEFAULT_EPSILON, DEFAULT_Q

BAD_INPUT = 2

_METRICS = (
    ("percent_agreement", "percent agreement"),
    ("cohen_kappa", "Cohen's kappa"),
    ("fleiss_kappa", "Fleiss' kappa"),
    ("krippendorff_alpha", "Krippendorff's alpha"),
    ("gwet_ac1", "Gwet's AC1"),
    ("krippendorff_alpha_masi", "Krippendorff's alpha (MASI)"),
    ("krippendorff_alpha_jaccard", "Krippendorff's alpha (Jaccard)"),
)


def _fail(message: str) -> CommandError:
    return CommandError(message, returncode=BAD_INPUT)


class Command(BaseCommand):
    help = (
        "Inter-rater agreement (docs/design.md §6): agreement --ratings FILE.csv [--multi] "
        "[--categories a,b,c] [--bootstrap B --seed S] --format json|text, or agreement STUDY "
        "[--dimension KEY] [--round N] [--level DEPTH] [--phase blind|discussed] --format json|text"
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", nargs="?", metavar="STUDY", help="the study's slug")
        parser.add_argument("--ratings", metavar="FILE.csv", help="a ratings file: item,annotator,label")
        parser.add_argument("--multi", action="store_true", help="each (item, annotator)'s rows form a set")
        parser.add_argument("--categories", metavar="a,b,c", help="the declared categories, comma-separated")
        parser.add_argument(
            "--dimension", metavar="KEY", help="one dimension (default: all, keyed by dimension)"
        )
        parser.add_argument(
            "--round", type=positive_int, metavar="N", help="one round (default: all rounds together)"
        )
        parser.add_argument(
            "--level", type=positive_int, metavar="DEPTH", help="compare at this tree depth (1 = top)"
        )
        parser.add_argument(
            "--bootstrap",
            type=whole_number(minimum=1, maximum=MAX_BOOTSTRAP, unit="replicates"),
            metavar="B",
            help=f"bootstrap replicates for alpha's 95%% CI (at most {MAX_BOOTSTRAP:,}, as in the API)",
        )
        parser.add_argument(
            "--seed",
            type=whole_number(minimum=0, maximum=2**32 - 1),
            metavar="S",
            help="random seed of the bootstrap",
        )
        parser.add_argument(
            "--raters",
            metavar="A,B,...",
            help="compare exactly these raters: usernames and model raters' names (NAME#k: sample k)",
        )
        parser.add_argument(
            "--alt-test", metavar="RATER", help="add the alternative-annotator test of this model rater"
        )
        parser.add_argument(
            "--include-assisted",
            action="store_true",
            help="with a model among the raters, keep people's labels made with a model's suggestion shown",
        )
        parser.add_argument("--epsilon", type=float, metavar="E", help="the alt-test's epsilon (default 0.2)")
        parser.add_argument("--q", type=float, metavar="Q", help="the alt-test's FDR level (default 0.05)")
        parser.add_argument(
            "--phase",
            choices=PHASES,
            default=None,
            help="blind (default: a revealed round's frozen blind labels) or discussed (after revisions)",
        )
        parser.add_argument("--format", choices=["json", "text"], default="text")

    def handle(self, *args: Any, **opts: Any) -> None:
        if (opts["study"] is None) == (opts["ratings"] is None):
            raise _fail("give either a study slug or --ratings FILE.csv (not both, not neither)")
        if opts["seed"] is not None and opts["bootstrap"] is None:
            raise _fail("--seed needs --bootstrap B")
        if opts["alt_test"] is None and (opts["epsilon"] is not None or opts["q"] is not None):
            raise _fail(f"--{'epsilon' if opts['epsilon'] is not None else 'q'} needs --alt-test RATER")
        if opts["ratings"] is not None:
            flags = ("dimension", "round", "level", "raters", "alt_test", "phase")
            wrong = [flag for flag in flags if opts[flag] is not None]
            wrong += ["include_assisted"] if opts["include_assisted"] else []
            if wrong:
                raise _fail(f"--{wrong[0].replace('_', '-')} applies to a study, not to --ratings")
            self._ratings(opts)
        else:
            wrong = [flag for flag in ("multi", "categories") if opts[flag]]
            if wrong:
                raise _fail(f"--{wrong[0]} applies to --ratings, not to a study")
            self._study(opts)

    def _ratings(self, opts: dict[str, Any]) -> None:
        categories = None if opts["categories"] is None else opts["categories"].split(",")
        path = input_file(opts["ratings"])
        try:
            table = parse_ratings(path, multi=opts["multi"], categories=categories)
        except RatingsFileError as exc:
            raise _fail(f"{path}: {exc}") from None
        report = agreement_report(table, bootstrap=opts["bootstrap"], seed=opts["seed"])
        self._print(report, opts["format"], title=str(path))

    def _study(self, opts: dict[str, Any]) -> None:
        try:
            study = get_study(opts["study"], reads_only=True)
        except CommandError as exc:
            raise _fail(str(exc)) from None
        try:
            snapshot = command_snapshot(
                study,
                dimension=opts["dimension"],
                round_number=opts["round"],
                level=opts["level"],
                bootstrap=opts["bootstrap"],
                seed=opts["seed"],
                raters=_names(opts["raters"]),
                alt_test_rater=opts["alt_test"],
                epsilon=DEFAULT_EPSILON if opts["epsilon"] is None else opts["epsilon"],
                q=DEFAULT_Q if opts["q"] is None else opts["q"],
                phase=opts["phase"] or BLIND,
                include_assisted=opts["include_assisted"],
                echo=lambda line: self.stderr.write(line),
            )
        except RatingsError as exc:
            raise _fail(f"{study.slug}: {exc}") from None
        if snapshot.status != "succeeded":
            raise CommandError(f"{study.slug}: {snapshot.error or snapshot.message}")
        result: dict[str, Any] = snapshot.result
        if opts["dimension"] is not None:
            self._print(result, opts["format"], title=_title(study.slug, result))
        elif opts["format"] == "json":
            self.stdout.write(json.dumps(result, ensure_ascii=False))
        else:
            self.stdout.write("\n\n".join(format_text(r, _title(study.slug, r)) for r in result.values()))

    def _print(self, report: dict[str, Any], fmt: str, *, title: str) -> None:
        if fmt == "json":
            self.stdout.write(json.dumps(report, ensure_ascii=False))
        else:
            self.stdout.write(format_text(report, title))


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise _fail(f"--raters: an empty name in {text!r}; give names separated by commas")
    return names


def _title(slug: str, report: dict[str, Any]) -> str:
    scope = "all rounds" if report["round"] is None else f"round {report['round']}"
    level = "full depth" if report["level"] is None else f"level {report['level']}"
    phase = " · after discussion" if report.get("phase") == "discussed" else ""
    return (
        f"{slug} · {report['dimension']} · {scope} · {level}{phase} · codebook v{report['codebook_version']}"
        + (" · values compared as sets" if report["values"] == "sets" else "")
    )


def _number(value: float | None) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.4f}"


def format_text(report: dict[str, Any], title: str) -> str:
    """The report as aligned plain text: the headline figures, then per category and per pair; every
    undefined figure reads ``n/a`` and its reason is listed at the end."""
    lines = [
        title,
        f"items {report['n_items']} · annotators {report['n_annotators']} · ratings {report['n_ratings']}",
        "",
    ]
    for key, label in _METRICS:
        if key not in report:
            continue
        line = f"{label:<32}{_number(report[key]):>9}"
        if report.get(f"{key}_ci"):
            low, high = report[f"{key}_ci"]
            line += f"   95% CI [{low:.4f}, {high:.4f}]"
        lines.append(line)
    categories = report["per_category"]
    if categories:
        width = max(12, *(len(name) for name in categories)) + 2
        lines += ["", f"{'category':<{width}}{'kappa':>9}{'fleiss':>9}{'alpha':>9}"]
        for name, values in categories.items():
            lines.append(
                f"{name:<{width}}{_number(values['cohen_kappa']):>9}{_number(values['fleiss_kappa']):>9}"
                f"{_number(values['krippendorff_alpha']):>9}"
            )
    if report["pairwise"]:
        lines += ["", f"{'pair':<32}{'n':>6}{'agree':>9}{'kappa':>9}"]
        for pair in report["pairwise"]:
            names = f"{pair['a']} / {pair['b']}"
            lines.append(
                f"{names:<32}{pair['n']:>6}{_number(pair['percent_agreement']):>9}"
                f"{_number(pair['cohen_kappa']):>9}"
            )
    if report.get("alt_test"):
        lines += ["", *format_alt_test(report["alt_test"])]
    if report["undefined"]:
        lines += ["", "n/a:"]
        lines += [f"  {key}: {reason}" for key, reason in report["undefined"].items()]
    return "\n".join(lines)


def format_alt_test(test: dict[str, Any]) -> list[str]:
    """The alternative-annotator test as lines of text."""
    verdict = "passed" if test["passed"] else "not passed"
    lines = [
        f"alternative-annotator test of {test['rater']} "
        f"(epsilon {test['epsilon']}, q {test['q']}): {verdict}",
        f"winning rate {_number(test['winning_rate'])} · advantage probability "
        f"{_number(test['advantage_probability'])} · items {test['n_items']}",
    ]
    if test["annotators"]:
        lines.append(f"{'annotator':<24}{'n':>6}{'p':>12}{'rho':>9}  won")
        for row in test["annotators"]:
            p = "n/a" if row["p_value"] is None else f"{row['p_value']:.3g}"
            won = "yes" if row["won"] else "no"
            lines.append(f"{row['annotator']:<24}{row['n']:>6}{p:>12}{_number(row['rho']):>9}  {won}")
    for name, n in test["skipped"].items():
        lines.append(f"  {name} left out: {n} item(s) shared with the model and another annotator, below 30")
    if test["reason"]:
        lines.append(f"  {test['reason']}")
    return lines
