"""``add_model_rater STUDY NAME (--base-url URL --model MODEL [--api-key-env VAR] | --baseline | --imported)
[--temperature T] [--samples K] [--concurrency C] [--timeout S] [--prompt FILE]`` (docs/design.md).

The API key is never an argument: ``--api-key-env`` names the environment variable that holds it.
Bad input ends with one line naming the problem and exit status 2; nothing is written.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from apps.accounts.commands import get_study
from apps.core.cli import BaseCommand, http_url, non_negative_number, positive_int
from apps.core.commands import file_error, input_file
from apps.core.files import FileReadError, read_text
from apps.raters.models import RaterKind
from apps.raters.services import RaterError, RaterSettings, add_model_rater

BAD_INPUT = 2


class Command(BaseCommand):
    help = (
        "Add a model rater: an OpenAI-compatible endpoint (--base-url, --model, --api-key-env VAR naming "
        "the variable that holds the key), the local baseline (--baseline) or imported labels (--imported)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="The study's slug.")
        parser.add_argument("name", help="The rater's name (letters, digits, '.', '_', '-').")
        kind = parser.add_mutually_exclusive_group(required=True)
        kind.add_argument("--base-url", type=http_url, metavar="URL", help="The server's API root (.../v1).")
        kind.add_argument("--baseline", action="store_true", help="TF-IDF + a linear classifier, local.")
        kind.add_argument("--imported", action="store_true", help="Labels made elsewhere, from a file.")
        parser.add_argument("--model", metavar="MODEL", default="", help="The model to ask for.")
        parser.add_argument(
            "--api-key-env", metavar="VAR", default="", help="The NAME of the variable holding the API key."
        )
        parser.add_argument("--temperature", type=non_negative_number, default=0.0, metavar="T")
        parser.add_argument("--samples", type=positive_int, default=1, metavar="K", help="Answers per item.")
        parser.add_argument("--concurrency", type=positive_int, default=4, metavar="C")
        parser.add_argument("--timeout", type=non_negative_number, default=60.0, metavar="S")
        parser.add_argument("--prompt", metavar="FILE", help="A prompt template (default: the built-in one).")

    def handle(self, *args: Any, **opts: Any) -> None:
        study = get_study(opts["study"])
        if opts["base_url"] is None and (opts["model"] or opts["api_key_env"]):
            flag = "--model" if opts["model"] else "--api-key-env"
            message = f"{flag} applies to an OpenAI-compatible rater (--base-url)"
            raise CommandError(message, returncode=BAD_INPUT)
        if opts["base_url"] is not None and not opts["model"]:
            raise CommandError("--base-url needs --model MODEL", returncode=BAD_INPUT)
        template = ""
        if opts["prompt"]:
            try:
                template = read_text(input_file(opts["prompt"]))
            except FileReadError as exc:
                raise file_error(exc) from None
        if opts["base_url"] is not None:
            kind = RaterKind.OPENAI
        else:
            kind = RaterKind.BASELINE if opts["baseline"] else RaterKind.IMPORTED
        settings = RaterSettings(
            kind=kind,
            base_url=opts["base_url"] or "",
            model=opts["model"],
            api_key_env=opts["api_key_env"],
            temperature=opts["temperature"],
            samples=opts["samples"],
            concurrency=opts["concurrency"],
            timeout=opts["timeout"],
            prompt_template=template,
        )
        try:
            rater = add_model_rater(study, opts["name"], settings, actor=None)
        except RaterError as exc:
            raise CommandError(f"{study.slug}: {exc}", returncode=BAD_INPUT) from None
        where = f" at {rater.host}, model {rater.model}" if rater.kind == RaterKind.OPENAI else ""
        self.stdout.write(f"Added {rater.get_kind_display()} rater {rater.name!r} to {study.slug}{where}.")
