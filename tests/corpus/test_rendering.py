"""Rendering untrusted bodies: what survives, what is highlighted, and what never gets through."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from urllib.parse import urlsplit

import pytest

from apps.corpus.rendering import (
    LINK_REL,
    language_for_tags,
    pygments_css,
    render_body,
    render_diff,
    render_html,
    render_markdown,
    render_options,
    render_text,
)

SAFE_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "dd", "del", "details", "div",
    "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img",
    "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strike",
    "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "tt",
    "u", "ul", "var", "wbr",
}  # fmt: skip
URL_ATTRIBUTES = {"href", "src", "cite", "action", "formaction", "background", "data", "poster", "xlink:href"}


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))


def elements(markup: str) -> list[tuple[str, dict[str, str | None]]]:
    collector = _Collector()
    collector.feed(markup)
    collector.close()
    return collector.elements


def assert_inert(markup: str) -> None:
    """No tag outside the allowlist, no handler, no style, no URL with a scheme other than http(s)/mailto."""
    for tag, attributes in elements(markup):
        assert tag in SAFE_TAGS, f"<{tag}> survived in {markup!r}"
        for name, value in attributes.items():
            assert not name.startswith("on"), f"handler {name} survived in {markup!r}"
            assert name != "style", f"style survived in {markup!r}"
            assert name not in {"srcdoc", "formaction", "action", "xlink:href", "id", "name"}, markup
            if name in URL_ATTRIBUTES and value is not None:
                scheme = urlsplit(value.strip()).scheme.lower()
                assert scheme in {"", "http", "https", "mailto"}, f"{name}={value!r} survived in {markup!r}"
                assert "script:" not in value.lower().replace("\t", "").replace("\n", "")
        if tag == "a":
            assert attributes.get("rel") == LINK_REL
        if tag == "img":
            assert attributes.get("referrerpolicy") == "no-referrer"


XSS_VECTORS = [
    "<script>alert(1)</script>",
    "<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
    "<img src=x onerror=alert(1)>",
    "<IMG SRC=x OnErRoR=alert(1)>",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    "<svg><a xlink:href='javascript:alert(1)'><text x='20' y='20'>XSS</text></a></svg>",
    "<math href='javascript:alert(1)'>CLICKME</math>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<noscript><p title='</noscript><img src=x onerror=alert(1)>'></noscript>",
    '<a href="javascript:alert(1)">x</a>',
    '<a href="JaVaScRiPt:alert(1)">x</a>',
    '<a href="jav&#x61;script:alert(1)">x</a>',
    '<a href="&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert(1)">x</a>',
    '<a href="&#x6A&#x61&#x76&#x61&#x73&#x63&#x72&#x69&#x70&#x74&#x3A;alert(1)">x</a>',
    '<a href="java\tscript:alert(1)">x</a>',
    '<a href="java&#x09;script:alert(1)">x</a>',
    '<a href=" \x01javascript:alert(1)">x</a>',
    '<a href="vbscript:msgbox(1)">x</a>',
    '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>',
    '<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+">',
    '<iframe src="javascript:alert(1)"></iframe>',
    '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
    '<object data="javascript:alert(1)"></object>',
    '<embed src="javascript:alert(1)">',
    '<form action="javascript:alert(1)"><button formaction="javascript:alert(2)">go</button></form>',
    '<div style="background:url(javascript:alert(1))">x</div>',
    '<div style="width: expression(alert(1))">x</div>',
    "<style>body{background:url('javascript:alert(1)')}</style>",
    "<body onload=alert(1)>",
    "<details open ontoggle=alert(1)>",
    "<input autofocus onfocus=alert(1)>",
    '<img """><script>alert(1)</script>">',
    "<scr<script>ipt>alert(1)</script>",
    "<<script>script>alert(1)<</script>/script>",
    '<a href="https://ok.example" onclick="alert(1)" target="_blank">x</a>',
    "<meta http-equiv='refresh' content='0;url=javascript:alert(1)'>",
    "<base href='javascript:alert(1)//'>",
    "<link rel=stylesheet href='javascript:alert(1)'>",
    '<!--<img src="--><img src=x onerror=alert(1)//">',
    "<table background='javascript:alert(1)'><tr><td>x</td></tr></table>",
    "<a href='x' id='__proto__' name='cookie'>clobber</a>",
    "<img src='https://ok.example/a.png' onload='alert(1)'>",
    "<video><source onerror='alert(1)'></video>",
    "<marquee onstart=alert(1)>x</marquee>",
    "<x onclick=alert(1)>custom element</x>",
    "<template><img src=x onerror=alert(1)></template>",
    "<textarea><script>alert(1)</script></textarea>",
    '<pre><code class="language-python&quot; onmouseover=&quot;alert(1)">x</code></pre>',
]

MARKDOWN_VECTORS = [
    "[x](javascript:alert(1))",
    "![x](javascript:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    "![x](data:image/png;base64,iVBORw0KGgo=)",
    "<javascript:alert(1)>",
    "[x](&#x6A;avascript:alert(1))",
    "[x](vbscript:msgbox(1))",
    "[x]: javascript:alert(1)\n\n[y][x]",
    "```js\n</code></pre><script>alert(1)</script>\n```",
    "`<img src=x onerror=alert(1)>`",
    "<details><summary>a</summary>\n\n<img src=x onerror=alert(1)>\n</details>",
    "javascript:alert(1) and www.example.com/<script>",
]


def test_at_least_thirty_distinct_xss_vectors_are_checked() -> None:
    assert len(set(XSS_VECTORS)) >= 30


@pytest.mark.parametrize("vector", XSS_VECTORS)
def test_an_xss_vector_in_html_comes_out_inert(vector: str) -> None:
    assert_inert(render_html(vector))


@pytest.mark.parametrize("vector", XSS_VECTORS + MARKDOWN_VECTORS)
def test_an_xss_vector_in_markdown_comes_out_inert(vector: str) -> None:
    assert_inert(render_markdown(vector))


@pytest.mark.parametrize("vector", XSS_VECTORS)
def test_an_xss_vector_in_plain_text_is_shown_as_text(vector: str) -> None:
    rendered = render_text(vector)
    assert_inert(rendered)
    assert [tag for tag, _ in elements(rendered)] == ["p"]


def test_script_and_style_are_removed_with_their_content() -> None:
    rendered = render_html("<p>keep</p><script>steal()</script><style>p{color:red}</style>")
    assert rendered == "<p>keep</p>"


def test_handlers_are_removed_but_the_element_and_text_remain() -> None:
    rendered = render_html('<p onclick="x()">hello <b onmouseover="y()">world</b></p>')
    assert rendered == "<p>hello <b>world</b></p>"


def test_links_get_noopener_nofollow_and_lose_their_target() -> None:
    rendered = render_html('<a href="https://example.org/x" target="_blank" rel="opener">x</a>')
    assert rendered == f'<a href="https://example.org/x" rel="{LINK_REL}">x</a>'


def test_code_inside_a_block_is_escaped_even_when_it_closes_the_block() -> None:
    rendered = render_html(
        '<pre class="lang-js"><code>&lt;/code&gt;&lt;/pre&gt;'
        "&lt;script&gt;alert(1)&lt;/script&gt;</code></pre>"
    )
    assert_inert(rendered)
    assert "<script" not in rendered
    assert "&lt;" in rendered and "script" in rendered


def test_a_fenced_block_is_highlighted_with_pygments_classes() -> None:
    rendered = render_markdown("```python\nimport torch\n```")
    assert rendered.startswith('<pre class="highlight"><code class="language-python">')
    assert '<span class="kn">import</span>' in rendered
    assert '<span class="nn">torch</span>' in rendered
    assert "style=" not in rendered


def test_identifiers_punctuation_and_whitespace_are_plain_text_without_a_span() -> None:
    """No stylesheet colours them: a span each would be two elements in three of a Python block for the
    sanitizer to parse and the page to carry. Keywords, names of modules and functions, strings, numbers,
    operators and comments keep theirs, and the code's text is the same."""
    code = (
        "import torch.distributed as dist\n\n"
        "def run(rank, size):\n    x = dist.get_rank()  # who\n    return {'a': [x, 1]}\n"
    )
    rendered = render_markdown(f"```python\n{code}```")
    classes = set(re.findall(r'<span class="([^"]*)"', rendered))
    assert not classes & {"n", "nx", "p", "w"}, classes
    assert {"kn", "nn", "k", "nf", "o", "s1", "mi", "c1"} <= classes, classes
    assert "(rank, size):" in rendered
    text = html.unescape(re.sub(r"<[^>]+>", "", rendered))
    assert text == code + "\n"  # cmark-gfm ends the block with a newline


def test_javascripts_identifiers_are_plain_text_too() -> None:
    """JavaScript's lexer gives identifiers `Name.Other` (`nx`), not `Name`."""
    rendered = render_markdown("```javascript\nconst total = items.length;\n```")
    assert '<span class="kd">const</span> total <span class="o">=</span> items.length;' in rendered


def test_a_diffs_lines_keep_their_inserted_and_deleted_spans() -> None:
    rendered = render_diff("@@ -1 +1 @@\n-old(x)\n+new(x)\n")
    assert '<span class="gd">-old(x)</span>' in rendered
    assert '<span class="gi">+new(x)</span>' in rendered


def test_the_fence_info_string_uses_only_its_first_word() -> None:
    rendered = render_markdown('```py title="train.py"\nx = 1\n```')
    assert 'class="language-python"' in rendered
    assert 'x <span class="o">=</span> <span class="mi">1</span>' in rendered


def test_stack_overflow_lang_classes_choose_the_lexer() -> None:
    rendered = render_html(
        '<pre class="lang-py prettyprint-override"><code>def f():\n    pass\n</code></pre>'
    )
    assert 'class="language-python"' in rendered
    assert '<span class="k">def</span>' in rendered


def test_an_unknown_language_stays_plain_escaped_text() -> None:
    rendered = render_markdown("```klingon\nx < y && z\n```")
    assert rendered == '<pre class="highlight"><code>x &lt; y &amp;&amp; z\n</code></pre>\n'


def test_lang_none_stays_plain_even_with_a_default_language() -> None:
    rendered = render_html(
        '<pre class="lang-none"><code>pip install torch</code></pre>', default_language="python"
    )
    assert rendered == '<pre class="highlight"><code>pip install torch</code></pre>'


def test_lang_default_and_unmarked_blocks_use_the_language_of_the_tags() -> None:
    language = language_for_tags(["tensorflow", "python-3.x", "keras"])
    assert language == "python"
    for markup in (
        '<pre class="lang-default"><code>import os</code></pre>',
        "<pre><code>import os</code></pre>",
    ):
        rendered = render_html(markup, default_language=language)
        assert '<span class="kn">import</span>' in rendered


def test_tags_that_name_no_language_give_no_default() -> None:
    assert language_for_tags(["tensorflow", "horovod"]) is None


def test_an_unhighlighted_language_class_from_the_source_is_dropped() -> None:
    rendered = render_html('<pre><code class="language-python btn btn-danger">x</code></pre>')
    assert "btn" not in rendered


def test_classes_from_the_source_are_stripped_so_it_cannot_borrow_our_styles() -> None:
    rendered = render_html('<span class="k modal-backdrop">x</span><div class="alert">y</div>')
    assert rendered == "<span>x</span><div>y</div>"


def test_gfm_tables_keep_their_alignment_without_style_attributes() -> None:
    rendered = render_markdown("| a | b | c |\n|:-|:-:|-:|\n| 1 | 2 | 3 |\n")
    assert '<th align="left">a</th>' in rendered
    assert '<td align="center">2</td>' in rendered
    assert '<td align="right">3</td>' in rendered
    assert "style" not in rendered


def test_bare_urls_and_www_links_become_links_like_on_github() -> None:
    rendered = render_markdown(
        "See https://github.com/horovod/horovod/issues/5. Also www.example.org/a_(b))."
    )
    assert f'<a href="https://github.com/horovod/horovod/issues/5" rel="{LINK_REL}">' in rendered
    assert "issues/5</a>." in rendered
    assert f'<a href="https://www.example.org/a_(b)" rel="{LINK_REL}">www.example.org/a_(b)</a>).' in rendered


def test_version_strings_and_urls_in_code_are_not_linked() -> None:
    rendered = render_markdown("torch@1.2.0 and `https://in.code/x`")
    assert "<a" not in rendered


def test_angle_bracket_autolinks_and_inline_links_survive() -> None:
    rendered = render_markdown("<https://example.org> and [docs](https://docs.example.org/x?a=1&b=2)")
    assert f'<a href="https://example.org" rel="{LINK_REL}">https://example.org</a>' in rendered
    assert 'href="https://docs.example.org/x?a=1&amp;b=2"' in rendered


def test_relative_links_resolve_against_the_base_url_or_are_removed() -> None:
    body = "[other issue](/horovod/horovod/issues/6)"
    assert "href" not in render_markdown(body)
    rendered = render_markdown(body, base_url="https://github.com/horovod/horovod/issues/5")
    assert 'href="https://github.com/horovod/horovod/issues/6"' in rendered


def test_each_body_resolves_relative_links_against_its_own_base() -> None:
    body = "[answer](/a/5) and [reply](reply.html)"
    first = render_markdown(body, base_url="https://stackoverflow.com/questions/1")
    second = render_markdown(body, base_url="https://datascience.stackexchange.com/questions/2")
    assert 'href="https://stackoverflow.com/a/5"' in first
    assert 'href="https://stackoverflow.com/questions/reply.html"' in first
    assert 'href="https://datascience.stackexchange.com/a/5"' in second
    assert "href" not in render_markdown(body)


def test_images_load_lazily_without_a_referrer() -> None:
    rendered = render_markdown("![plot](https://example.org/plot.png)")
    assert elements(rendered)[1] == (
        "img",
        {
            "src": "https://example.org/plot.png",
            "alt": "plot",
            "loading": "lazy",
            "referrerpolicy": "no-referrer",
        },
    )


def test_raw_html_allowed_on_github_survives() -> None:
    rendered = render_markdown("<details><summary>Log</summary>\n\n```\nTraceback\n```\n</details>")
    assert "<details><summary>Log</summary>" in rendered
    assert "Traceback" in rendered


def test_plain_text_paragraphs_and_line_breaks() -> None:
    assert render_text("a <b> & c\nnext\n\n\nsecond") == "<p>a &lt;b&gt; &amp; c<br>next</p><p>second</p>"


def test_render_body_dispatches_on_the_format() -> None:
    assert render_body("*x*", "markdown") == "<p><em>x</em></p>\n"
    assert render_body("*x*", "text") == "<p>*x*</p>"
    assert render_body("<em>x</em>", "html") == "<em>x</em>"


def test_render_options_use_the_item_page_and_its_tags() -> None:
    assert render_options("https://stackoverflow.com/questions/1", ["c++"]) == {
        "base_url": "https://stackoverflow.com/questions/1",
        "default_language": "cpp",
    }


def test_the_stylesheet_covers_the_token_classes() -> None:
    css = pygments_css()
    assert ".highlight .k " in css
    assert ".highlight .kn " in css


def test_a_huge_code_block_is_not_highlighted() -> None:
    code = "x = 1\n" * 10_000
    rendered = render_markdown(f"```python\n{code}```")
    assert "<span" not in rendered
    assert rendered.count("x = 1") == 10_000
