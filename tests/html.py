"""What a page says whatever the data, taken out before a test looks for a name or a value in it.

A CSRF token is 64 random letters and digits: "bob" turns up in one page in about seven hundred, so a
blindness check that searched the raw page failed now and then for no fault of the code.
"""

from __future__ import annotations

import re

# What differs between two requests whatever the data: CSRF tokens (the form field, htmx's header and the
# cookie's copy), CSP nonces, the moment of a submission (ISO in the API, "2026-12-03 12:10" on the pages:
# two worlds may straddle a minute).
VOLATILE = re.compile(
    r"csrfmiddlewaretoken\" value=\"[^\"]+|\"X-CSRFToken\": \"[^\"]+|nonce=\"[^\"]+"
    r"|\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?"
)


def steady(text: str) -> str:
    """`text` with every volatile value replaced by "…"."""
    return VOLATILE.sub("…", text)
