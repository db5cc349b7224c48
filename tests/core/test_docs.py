"""The design in the repository stays the one the code points to (issue 19, point 8).

Code, tests and docs refer to sections of docs/design.md as "docs/design.md §N" (or, in docs/, as a link
``[design.md §N](design.md#<heading>)``). These tests fail when a file points to the brief outside the
repository instead, to a section, step or anchor docs/design.md does not have, or when the command-line
contract of §4 and the commands that exist drift apart. No database.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
TEXT_SUFFIXES = {".py", ".md", ".html", ".js", ".css", ".txt", ".toml", ".cfg", ".ini", ".yml", ".yaml", ""}
SKIPPED_DIRS = {"node_modules", "var", "media", "__pycache__", "htmlcov", "staticfiles"}

# Built from parts so that this file does not name the outside brief itself.
OUTSIDE_BRIEF = re.compile("DESIGN" + r"(?:\.md)?\s*§")
REFERENCE = re.compile(r"design\.md\s*§")
SECTION = re.compile(r"§(\d+)(?:\.(\d+)| steps? (\d+)(?:-(\d+))?)?")
ANCHOR = re.compile(r"\(design\.md#([a-z0-9-]+)\)")
HEADING = re.compile(r"^## (\d+)\. (.+)$", re.MULTILINE)
STEP = re.compile(r"^(\d+)\. \*\*", re.MULTILINE)


def repository_files() -> list[Path]:
    """Every text file of the repository that people read: sources, tests, docs, templates, config."""
    found = []
    for directory, subdirectories, files in os.walk(ROOT):
        subdirectories[:] = [d for d in subdirectories if not d.startswith(".") and d not in SKIPPED_DIRS]
        for name in files:
            path = Path(directory, name)
            if path.suffix in TEXT_SUFFIXES and not name.startswith("."):
                found.append(path)
    return found


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-")


def sections() -> dict[int, str]:
    """docs/design.md's numbered sections: number → text of the section."""
    text = DESIGN.read_text(encoding="utf-8")
    heads = list(HEADING.finditer(text))
    return {
        int(head[1]): text[head.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        for i, head in enumerate(heads)
    }


def test_no_file_points_to_the_design_outside_the_repository() -> None:
    offenders = []
    for path in repository_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE_BRIEF.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == [], "point to docs/design.md §N instead:\n" + "\n".join(offenders)


def test_every_design_reference_names_a_section_and_step_that_exist() -> None:
    numbered = sections()
    steps = {int(n) for n in STEP.findall(numbered[2])}
    anchors = {slug(head[0] + ". " + head[1]) for head in HEADING.findall(DESIGN.read_text(encoding="utf-8"))}
    broken = []
    for path in repository_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{number}"
            if REFERENCE.search(line):
                # Every § on such a line is one of the design's ("§5 labels CSV, §6 levels").
                for match in SECTION.finditer(line):
                    section = int(match[1])
                    if section not in numbered:
                        broken.append(f"{where}: §{section} is not a section of docs/design.md")
                        continue
                    first = match[2] or match[3]
                    last = match[4] or first
                    if first is not None:
                        wanted = set(range(int(first), int(last) + 1))
                        if section != 2 or not wanted <= steps:
                            broken.append(f"{where}: {match[0]} is not a step of docs/design.md")
            for anchor in ANCHOR.findall(line):
                if anchor not in anchors:
                    broken.append(f"{where}: design.md#{anchor} is not a heading of docs/design.md")
    assert broken == [], "\n".join(broken)


def test_the_design_has_its_ten_sections_and_eight_lifecycle_steps() -> None:
    numbered = sections()
    assert sorted(numbered) == list(range(1, 11))
    assert [int(n) for n in STEP.findall(numbered[2])] == list(range(1, 9))


def existing_commands() -> set[str]:
    return {
        path.stem for path in ROOT.glob("apps/*/management/commands/*.py") if not path.name.startswith("_")
    }


def contract_blocks() -> tuple[str, str]:
    """The code blocks of §4: the commands built today, then the planned ones (none since `invite` was
    built: the second block is then absent)."""
    blocks = re.findall(r"```\n(.*?)```", sections()[4], re.DOTALL)
    assert len(blocks) in (1, 2), "§4 has one block of built commands and at most one of planned ones"
    return blocks[0], blocks[1] if len(blocks) == 2 else ""


def command_names(block: str) -> set[str]:
    return set(re.findall(r"manage\.py (\w+)", block))


def test_every_command_that_exists_is_in_the_contract_and_in_the_cli_reference() -> None:
    built, _ = contract_blocks()
    cli = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert existing_commands() - command_names(built) == set()
    assert command_names(built) - existing_commands() == set()
    assert {name for name in existing_commands() if f"## {name}\n" not in cli} == set()


@pytest.mark.parametrize("name", sorted(command_names(contract_blocks()[1])))
def test_a_planned_command_is_not_built_yet(name: str) -> None:
    """A planned command that gets built moves to the first block of §4 (flags of built commands, such as
    ``import_labels --phase``, are planned in the second block too: only new names are checked here)."""
    built, _ = contract_blocks()
    if name in command_names(built):
        return
    assert name not in existing_commands(), f"{name} exists: move it to the built commands of §4"
