"""Render untrusted issue and answer bodies (Markdown, HTML, plain text) to safe HTML.

Pure module (no Django). Item bodies come from the internet (docs/design.md §8): whatever they hold,
the output of every function here runs no script, carries no event handler, loads nothing through
``javascript:``, ``vbscript:`` or ``data:`` URLs, and its links get ``rel="noopener nofollow"``.

Pipeline, the same for every format:

1. Markdown is turned into HTML by cmark-gfm (``cmarkgfm``), GitHub's own renderer: CommonMark plus
   tables, strikethrough, fenced code, raw HTML (sanitised below), and bare ``http(s)://``, ``www.``
   and e-mail autolinks, as on GitHub. It is C, about 7 times faster than markdown-it-py was here.
2. A first nh3 (ammonia) pass parses the HTML into a normal form, keeping ``class`` on
   ``<pre>``/``<code>`` so that the language of each code block can be read: a fence's info word
   (``language-python``) or Stack Overflow's ``lang-py`` class, else ``default_language``. (Skipped for
   Markdown without ``<``: cmark-gfm's own markup is that form already.)
3. Each ``<pre><code>`` block is highlighted with Pygments as class-based ``<span>`` elements
   (no inline styles: ``static/css/app.css`` colours them; :func:`pygments_css` gives Pygments' own), each
   lexer trying at each character only the rules that can start there (:mod:`apps.corpus.lexing`). Plain
   identifiers, punctuation and whitespace are written as text without a span (:func:`_unwrapped`).
   An unknown language, ``lang-none``, or a block over 50,000 characters stays plain, escaped text.
4. A strict nh3 pass writes the final HTML: an allowlist of tags and attributes; ``script``,
   ``style`` and other active content dropped together with their content; URLs limited to
   ``http``, ``https`` and ``mailto`` (relative URLs are resolved against ``base_url`` when given,
   else removed); ``class`` kept only for Pygments token classes, ``highlight`` on ``<pre>`` and
   ``language-*`` on ``<code>``; images get ``loading="lazy"`` and ``referrerpolicy="no-referrer"``.

The security guarantee rests on step 4 alone: steps 2 and 3 only shape the HTML it receives.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from functools import cache
from urllib.parse import urljoin, urlsplit

import cmarkgfm
import nh3
from cmarkgfm.cmark import Options
from pygments import format as format_tokens
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_all_lexers, get_lexer_by_name
from pygments.token import STANDARD_TYPES, Name, Punctuation, Text, _TokenType
from pygments.util import ClassNotFound

from apps.corpus.lexing import fast_lexer
from apps.corpus.records import BodyFormat

LINK_REL = "noopener nofollow"
MAX_HIGHLIGHT_CHARS = 50_000
PLAIN_LANGUAGES = frozenset({"none", "nohighlight", "plain", "plaintext", "text", "txt"})

_ALLOWED_TAGS = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "dd", "del", "details", "div",
        "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img",
        "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strike",
        "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "tt",
        "u", "ul", "var", "wbr",
    }
)  # fmt: skip
# Removed with everything inside them, rather than unwrapped to their text.
_DROPPED_WITH_CONTENT = frozenset(
    {"script", "style", "template", "noscript", "iframe", "object", "embed", "svg", "math", "textarea",
     "select", "title", "xmp", "noembed", "noframes", "frameset", "applet"}
)  # fmt: skip
_ALLOWED_ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "img": {"src", "alt", "title", "width", "height"},
    "ol": {"start"},
    "td": {"colspan", "rowspan"},
    "th": {"colspan", "rowspan"},
    "details": {"open"},
    "q": {"cite"},
    "blockquote": {"cite"},
    "del": {"datetime"},
    "ins": {"datetime"},
}
_ALIGNMENTS = {"left", "center", "right"}
_URL_SCHEMES = frozenset({"http", "https", "mailto"})

_CODE_BLOCK = re.compile(
    r'<pre(?: class="(?P<pre>[^"]*)")?>\s*<code(?: class="(?P<code>[^"]*)")?>(?P<body>.*?)</code>\s*</pre>',
    re.DOTALL,
)
_TAG = re.compile(r"<[^>]*>")

# Stack Overflow tags that name the language of a question's code (used for `lang-default` blocks).
_TAG_LANGUAGES = {
    "python": "python", "python-3.x": "python", "python-2.7": "python", "java": "java",
    "javascript": "javascript", "typescript": "typescript", "c++": "cpp", "c": "c", "c#": "csharp",
    "r": "r", "go": "go", "rust": "rust", "bash": "bash", "shell": "bash", "sql": "sql", "json": "json",
    "yaml": "yaml", "ruby": "ruby", "php": "php", "kotlin": "kotlin", "swift": "swift",
    "scala": "scala", "julia": "julia", "matlab": "matlab", "lua": "lua", "perl": "perl", "cuda": "cuda",
}  # fmt: skip


# --- GitHub-flavoured Markdown --------------------------------------------------------------------

# cmark-gfm's extensions as GitHub enables them, less `tasklist` (its `<input>` would not survive the
# sanitizer, and the `[ ]` text would go with it). `tagfilter` escapes `<script>`, `<style>`... before
# the sanitizer sees them; the sanitizer would drop them anyway.
_GFM_EXTENSIONS = ("table", "strikethrough", "autolink", "tagfilter")
# cmark-gfm links a bare `www.` as `http://`; the page is served over https, so the link is too.
_WWW_AUTOLINK = re.compile(r'<a href="http://(www\.[^"]*)">')


def _markdown_html(text: str) -> str:
    """GitHub's own renderer (cmark-gfm): CommonMark plus tables, strikethrough, bare-URL autolinks,
    raw HTML passed through (``UNSAFE``: the sanitizer below is what makes it safe)."""
    markup = cmarkgfm.markdown_to_html_with_extensions(
        text, options=Options.CMARK_OPT_UNSAFE, extensions=list(_GFM_EXTENSIONS)
    )
    return _WWW_AUTOLINK.sub(r'<a href="https://\1">', markup)


# --- sanitizers ------------------------------------------------------------------------------------


@cache
def _code_classes() -> frozenset[str]:
    return frozenset(
        f"language-{aliases[0]}" for _name, aliases, _files, _mimes in get_all_lexers() if aliases
    )


@cache
def _token_classes() -> frozenset[str]:
    return frozenset(name for name in STANDARD_TYPES.values() if name)


@cache
def _loose_cleaner() -> nh3.Cleaner:
    attributes = {tag: set(names) for tag, names in _ALLOWED_ATTRIBUTES.items()}
    attributes["pre"] = {"class"}
    attributes["code"] = {"class"}
    attributes["td"] = attributes["td"] | {"align"}
    attributes["th"] = attributes["th"] | {"align"}
    return nh3.Cleaner(
        tags=set(_ALLOWED_TAGS),
        clean_content_tags=set(_DROPPED_WITH_CONTENT),
        attributes=attributes,
        url_schemes=set(_URL_SCHEMES),
        link_rel=None,
    )


# The base of relative links for the body being cleaned. One strict cleaner serves every body (a
# cleaner per base URL would be one per item); its url_relative callback reads the base from here.
_BASE_URL: ContextVar[str | None] = ContextVar("_BASE_URL", default=None)


def _resolve_relative(url: str) -> str | None:
    """A relative URL resolved against the current base, or ``None`` (removed) without one."""
    base = _BASE_URL.get()
    if not base:
        return None
    resolved = urljoin(base, url)
    return resolved if urlsplit(resolved).scheme in _URL_SCHEMES else None


@cache
def _strict_cleaner() -> nh3.Cleaner:
    return nh3.Cleaner(
        tags=set(_ALLOWED_TAGS),
        clean_content_tags=set(_DROPPED_WITH_CONTENT),
        attributes={tag: set(names) for tag, names in _ALLOWED_ATTRIBUTES.items()},
        tag_attribute_values={"td": {"align": _ALIGNMENTS}, "th": {"align": _ALIGNMENTS}},
        set_tag_attribute_values={"img": {"loading": "lazy", "referrerpolicy": "no-referrer"}},
        allowed_classes={
            "span": set(_token_classes()),
            "pre": {"highlight"},
            "code": set(_code_classes()),
        },
        url_schemes=set(_URL_SCHEMES),
        url_relative=_resolve_relative,
        link_rel=LINK_REL,
        strip_comments=True,
    )


# --- code highlighting -----------------------------------------------------------------------------


@cache
def _lexer(name: str) -> Lexer | None:
    try:
        return fast_lexer(get_lexer_by_name(name))
    except ClassNotFound:
        return None


def _language_lexer(classes: Sequence[str], default_language: str | None) -> Lexer | None:
    for class_name in classes:
        for prefix in ("language-", "lang-"):
            if not class_name.startswith(prefix):
                continue
            name = class_name.removeprefix(prefix).lower()
            if name in PLAIN_LANGUAGES:
                return None
            if name == "default":
                break
            return _lexer(name[:40])
    return _lexer(default_language.lower()[:40]) if default_language else None


@cache
def _formatter() -> HtmlFormatter[str]:
    return HtmlFormatter(nowrap=True)


_WHITESPACE = Text.Whitespace
_OTHER = Name.Other


def _unwrapped(tokens: Iterable[tuple[_TokenType, str]]) -> Iterator[tuple[_TokenType, str]]:
    """The tokens, with plain identifiers, punctuation and whitespace made plain text, which the formatter
    writes without a ``<span>``: ``static/css/app.css`` colours none of them (Pygments' default style only
    whitespace, where a colour does not show; GitHub's own markup leaves them bare too), and they are about
    two spans in three of a Python block, each one more element for the sanitizer to parse and the page
    to carry. (Token types are singletons: `is` spares hashing a tuple per token.)"""
    for token_type, value in tokens:
        if (
            token_type is Name
            or token_type is Punctuation
            or token_type is _WHITESPACE
            or token_type is _OTHER
        ):
            yield Text, value
        else:
            yield token_type, value


def _highlight(code: str, lexer: Lexer) -> str:
    """Pygments' class-based HTML for `code`, without the spans :func:`_unwrapped` leaves out."""
    return str(format_tokens(_unwrapped(lexer.get_tokens(code)), _formatter()))


def _highlight_block(found: re.Match[str], default_language: str | None) -> str:
    classes = f"{found.group('pre') or ''} {found.group('code') or ''}".split()
    code = html.unescape(_TAG.sub("", found.group("body")))
    lexer = _language_lexer(classes, default_language)
    if lexer is None or len(code) > MAX_HIGHLIGHT_CHARS:
        return f'<pre class="highlight"><code>{html.escape(code, quote=False)}</code></pre>'
    body = _highlight(code, lexer)
    return f'<pre class="highlight"><code class="language-{lexer.aliases[0]}">{body}</code></pre>'


def _finish(
    markup: str, base_url: str | None, default_language: str | None, *, normalise: bool = True
) -> str:
    normalised = _loose_cleaner().clean(markup) if normalise else markup
    highlighted = _CODE_BLOCK.sub(lambda found: _highlight_block(found, default_language), normalised)
    token = _BASE_URL.set(base_url or None)
    try:
        return _strict_cleaner().clean(highlighted)
    finally:
        _BASE_URL.reset(token)


# --- public API ------------------------------------------------------------------------------------


def render_markdown(text: str, *, base_url: str | None = None, default_language: str | None = None) -> str:
    """Safe HTML for a GitHub-flavoured Markdown body (see the module docstring).

    A body without ``<`` holds no raw HTML: cmark-gfm's own markup is already in the form step 3 reads,
    so the first nh3 pass is skipped (the strict pass, the guarantee, always runs)."""
    return _finish(_markdown_html(text), base_url, default_language, normalise="<" in text)


def render_html(markup: str, *, base_url: str | None = None, default_language: str | None = None) -> str:
    """Safe HTML for an HTML body (Stack Exchange posts), code blocks highlighted."""
    return _finish(markup, base_url, default_language)


def render_text(text: str) -> str:
    """Plain text as HTML paragraphs: blank lines separate paragraphs, single newlines become ``<br>``."""
    paragraphs = [part for part in re.split(r"\n\s*\n", text.replace("\r\n", "\n").strip()) if part.strip()]
    markup = "".join(f"<p>{html.escape(part).replace(chr(10), '<br>')}</p>" for part in paragraphs)
    return _strict_cleaner().clean(markup)


def render_body(
    body: str, body_format: BodyFormat, *, base_url: str | None = None, default_language: str | None = None
) -> str:
    """Dispatch on ``body_format`` (``markdown``, ``html`` or ``text``)."""
    if body_format == "markdown":
        return render_markdown(body, base_url=base_url, default_language=default_language)
    if body_format == "html":
        return render_html(body, base_url=base_url, default_language=default_language)
    if body_format == "text":
        return render_text(body)
    raise ValueError(f"unknown body format {body_format!r}")


def render_diff(patch: str) -> str:
    """Safe HTML for a unified diff (a pull request's or commit's patch of one file): Pygments' diff
    lexer (``gi`` added, ``gd`` deleted, ``gu`` hunk header spans), then the same strict sanitizer.

    Text only ever reaches the page escaped by Pygments and cleaned again by nh3, so markup inside a
    diff (a ``<script>`` line added by the change) shows as text.
    """
    if not patch:
        return ""
    lexer = _lexer("diff")
    assert lexer is not None  # Pygments has always shipped its diff lexer
    body = _highlight(patch, lexer)
    return str(
        _strict_cleaner().clean(f'<pre class="highlight"><code class="language-diff">{body}</code></pre>')
    )


def language_for_tags(tags: Sequence[str]) -> str | None:
    """The code language a Stack Overflow question's tags imply (for its ``lang-default`` blocks)."""
    for tag in tags:
        language = _TAG_LANGUAGES.get(tag.lower())
        if language is not None:
            return language
    return None


def pygments_css(selector: str = ".highlight", style: str = "default") -> str:
    """The stylesheet for highlighted code blocks (class-based spans), for the static CSS."""
    return str(HtmlFormatter(style=style).get_style_defs(selector))


def render_options(url: str, tags: Sequence[str]) -> dict[str, str | None]:
    """Keyword arguments for :func:`render_body` for the item at ``url``: its page as the base of
    relative links (as a browser on GitHub or Stack Overflow would resolve them) and the default
    code language implied by its tags."""
    return {"base_url": url or None, "default_language": language_for_tags(tags)}


# A body to render: (text, format, the item's URL, the item's tags). Plain tuples, so that a batch
# crosses to a worker process of a pool cheaply.
RenderJob = tuple[str, str, str, Sequence[str]]


def render_job(job: RenderJob) -> str:
    """Safe HTML for one body of an item (its URL resolves relative links, its tags choose the default
    code language); an empty body gives ``""``, an unknown format is rendered as plain text."""
    body, body_format, url, tags = job
    if not body:
        return ""
    fmt: BodyFormat = body_format if body_format in ("markdown", "html") else "text"  # type: ignore[assignment]
    return render_body(body, fmt, base_url=url or None, default_language=language_for_tags(tags))


def render_many(jobs: Sequence[RenderJob]) -> list[str]:
    """:func:`render_job` of each job, in order (the unit of work of a render pool's worker)."""
    return [render_job(job) for job in jobs]


# The languages a render process warms up when it starts (:func:`warm_up`, from `render_worker.start`): those
# of most code blocks in issues and posts. Python's lexer alone makes its states in about 0.1 s, the first
# time a body needs them.
WARM_UP_LANGUAGES = ("python", "pytb", "console", "bash", "json", "yaml", "diff", "c", "cpp", "java")


def warm_up() -> None:
    """Render a small body with a code block in each of :data:`WARM_UP_LANGUAGES`: cmark-gfm, both nh3
    cleaners and those lexers' first states are ready before the first real body."""
    blocks = "".join(
        f"```{language}\nimport os  # x\nx = {{'a': [1, 2.0]}}\n$ run --flag=1 -> \"y\"\n```\n\n"
        for language in WARM_UP_LANGUAGES
    )
    render_many([(f"Warm <b>up</b> [link](a)\n\n{blocks}", "markdown", "https://example.org/", [])])
