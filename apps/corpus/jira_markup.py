"""Jira's two text formats as Markdown, so that they go through the one renderer and sanitizer.

Pure module (no Django). Jira Server / Data Center (REST API 2, exports) writes descriptions and
comments in its *wiki markup*; Jira Cloud (REST API 3) in the *Atlassian Document Format* (ADF), a JSON
tree. Both are turned into GitHub-flavoured Markdown here and stored with ``body_format="markdown"``;
:mod:`apps.corpus.rendering` then renders and sanitizes them like any other body, so whatever markup
or HTML they hold, the page shows text (the security guarantee is the sanitizer's, not this module's).

Wiki markup covered: ``h1.`` to ``h6.``, ``bq.``, ``*bold*``, ``_italic_``, ``-strike-``, ``{{mono}}``,
``[text|url]``, ``[url]``, ``[~user]``, ``{code[:lang]}``, ``{noformat}``, ``{quote}``, ``*``/``#``
lists (nested), ``||head||`` / ``|cell|`` tables, ``\\\\`` line breaks; ``{color}``, ``{panel}`` and
images (``!file.png!``) keep their text only. ADF covered: paragraphs, headings, text marks (strong,
em, code, strike, link), lists, code blocks, block quotes, panels, rules, hard breaks, mentions, emoji,
inline cards, tables; unknown nodes keep their text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_BLOCK = re.compile(r"(?<!\{)\{(code|noformat)(?::([^}]*))?\}(?!\})(.*?)(?<!\{)\{\1\}(?!\})", re.S)
_QUOTE = re.compile(r"\{quote\}(.*?)\{quote\}", re.S)
_HEADING = re.compile(r"^h([1-6])\.\s*(.*)$")
_LIST = re.compile(r"^([*#-]+)\s+(.*)$")
_LINK = re.compile(r"\[([^\[\]|]*)\|([^\[\]]+)\]")
_BARE_LINK = re.compile(r"\[((?:https?|mailto):[^\[\]|]+)\]")
_USER = re.compile(r"\[~([^\[\]]+)\]")
_BOLD = re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])")
_STRIKE = re.compile(r"(?<![\w-])-(?=\S)([^-\n]+?)(?<=\S)-(?![\w-])")
_MONO = re.compile(r"\{\{(.+?)\}\}")
_DROPPED = re.compile(r"\{(?:color(?::[^}]*)?|panel(?::[^}]*)?|anchor:[^}]*)\}")
_IMAGE = re.compile(r"!([^!\s|]+)(?:\|[^!]*)?!")
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#+!|~])")


def wiki_to_markdown(text: str) -> str:
    """Jira wiki markup as Markdown (see the module docstring)."""
    blocks: list[str] = []

    def keep(found: re.Match[str]) -> str:
        language = (found.group(2) or "").split("|")[0].strip() if found.group(1) == "code" else ""
        if "=" in language:
            language = ""
        blocks.append(f"\n```{language}\n{found.group(3).strip(chr(10))}\n```\n")
        return f"\x00{len(blocks) - 1}\x00"

    text = _BLOCK.sub(keep, text.replace("\r\n", "\n"))
    text = _QUOTE.sub(lambda found: _quote(found.group(1)), text)
    lines = [_line(line) for line in text.split("\n")]
    out = "\n".join(lines)
    return re.sub(r"\x00(\d+)\x00", lambda found: blocks[int(found.group(1))], out)


def _quote(text: str) -> str:
    return "\n" + "\n".join(f"> {line}" for line in text.strip().split("\n")) + "\n\n"


def _line(line: str) -> str:
    heading = _HEADING.match(line)
    if heading:
        return "#" * int(heading.group(1)) + " " + _inline(heading.group(2))
    if line.startswith("bq. "):
        return "> " + _inline(line[4:]) + "\n"
    if line.startswith("||") or (line.startswith("|") and line.rstrip().endswith("|")):
        return _table_row(line)
    listed = _LIST.match(line)
    if listed and set(listed.group(1)) <= {"*", "#"} and not _BOLD.match(line):
        depth = len(listed.group(1)) - 1
        marker = "1." if listed.group(1)[-1] == "#" else "-"
        return "   " * depth + f"{marker} " + _inline(listed.group(2))
    return _inline(line)


def _table_row(line: str) -> str:
    header = line.startswith("||")
    cells = [cell.strip() for cell in re.split(r"\|\|?", line.strip().strip("|"))]
    row = "| " + " | ".join(_inline(cell) for cell in cells) + " |"
    return row + "\n|" + "---|" * len(cells) if header else row


def _inline(text: str) -> str:
    text = _DROPPED.sub("", text)
    text = _IMAGE.sub(lambda found: found.group(1), text)
    text = _MONO.sub(lambda found: f"`{found.group(1)}`", text)
    text = _LINK.sub(lambda found: f"[{found.group(1) or found.group(2)}]({found.group(2).strip()})", text)
    text = _BARE_LINK.sub(lambda found: f"<{found.group(1).strip()}>", text)
    text = _USER.sub(lambda found: f"@{found.group(1)}", text)
    text = _BOLD.sub(lambda found: f"**{found.group(1)}**", text)
    text = _ITALIC.sub(lambda found: f"*{found.group(1)}*", text)
    text = _STRIKE.sub(lambda found: f"~~{found.group(1)}~~", text)
    return text.replace("\\\\", "  \n")


# --- Atlassian Document Format ------------------------------------------------------------------------


def adf_to_markdown(document: Mapping[str, Any] | None) -> str:
    """An ADF document (``{"type": "doc", "content": [...]}``) as Markdown; ``""`` for None."""
    if not isinstance(document, Mapping):
        return ""
    return _blocks(document.get("content") or [], "").strip() + "\n"


def _blocks(nodes: Sequence[Any], indent: str) -> str:
    return "".join(_block(node, indent) for node in nodes if isinstance(node, Mapping))


def _block(node: Mapping[str, Any], indent: str) -> str:
    kind = node.get("type")
    content = node.get("content") or []
    attrs = _attrs(node)
    if kind == "paragraph":
        return indent + _inlines(content) + "\n\n"
    if kind == "heading":
        level = attrs.get("level")
        return "#" * max(1, min(6, level if isinstance(level, int) else 1)) + " " + _inlines(content) + "\n\n"
    if kind in ("bulletList", "orderedList"):
        marker = "1." if kind == "orderedList" else "-"
        items = [
            indent + f"{marker} " + _blocks(item.get("content") or [], indent + "   ").strip() + "\n"
            for item in content
            if isinstance(item, Mapping)
        ]
        return "".join(items) + "\n"
    if kind == "codeBlock":
        language = str(attrs.get("language") or "")
        code = "".join(str(text.get("text", "")) for text in content if isinstance(text, Mapping))
        return f"```{re.sub(r'[^A-Za-z0-9_+-]', '', language)}\n{code}\n```\n\n"
    if kind in ("blockquote", "panel"):
        inner = _blocks(content, "").strip()
        return "\n".join(f"> {line}" for line in inner.split("\n")) + "\n\n"
    if kind == "rule":
        return "---\n\n"
    if kind == "table":
        return _adf_table(content) + "\n"
    if content:
        return _blocks(content, indent)
    return indent + _inline_node(node) + ("\n\n" if node.get("type") != "text" else "")


def _adf_table(rows: Sequence[Any]) -> str:
    lines = []
    for n, row in enumerate(r for r in rows if isinstance(r, Mapping)):
        cells = [
            _blocks(cell.get("content") or [], "").strip().replace("\n", " ")
            for cell in row.get("content") or []
            if isinstance(cell, Mapping)
        ]
        lines.append("| " + " | ".join(cells) + " |")
        if n == 0:
            lines.append("|" + "---|" * len(cells))
    return "\n".join(lines) + "\n"


def _inlines(nodes: Sequence[Any]) -> str:
    return "".join(_inline_node(node) for node in nodes if isinstance(node, Mapping))


def _inline_node(node: Mapping[str, Any]) -> str:
    kind = node.get("type")
    attrs = _attrs(node)
    if kind == "text":
        return _marked(str(node.get("text", "")), node.get("marks") or [])
    if kind == "hardBreak":
        return "  \n"
    if kind == "mention":
        return "@" + _escape(str(attrs.get("text") or attrs.get("id") or "").lstrip("@"))
    if kind == "emoji":
        return _escape(str(attrs.get("text") or attrs.get("shortName") or ""))
    if kind in ("inlineCard", "blockCard"):
        url = str(attrs.get("url") or "")
        return f"<{url}>" if re.match(r"https?://\S+$", url) else ""
    return _inlines(node.get("content") or [])


def _marked(text: str, marks: Sequence[Any]) -> str:
    names = {str(mark.get("type")): mark for mark in marks if isinstance(mark, Mapping)}
    out = "`" + text.replace("`", "'") + "`" if "code" in names else _escape(text)
    if "strong" in names:
        out = f"**{out}**"
    if "em" in names:
        out = f"*{out}*"
    if "strike" in names:
        out = f"~~{out}~~"
    link = names.get("link")
    if link is not None:
        href = str(_attrs(link).get("href") or "")
        if href:
            out = f"[{out}]({href.replace(')', '%29').replace(' ', '%20')})"
    return out


def _attrs(node: Mapping[str, Any]) -> Mapping[str, Any]:
    attrs = node.get("attrs")
    return attrs if isinstance(attrs, Mapping) else {}


def _escape(text: str) -> str:
    """Text as literal Markdown: every character Markdown could read as markup is backslash-escaped."""
    return _MD_SPECIAL.sub(r"\\\1", text)
