"""What the GitHub and Stack Exchange clients share: transient errors and progress callbacks."""

from __future__ import annotations

from collections.abc import Callable

import requests

# requests wraps resets and refusals in its ConnectionError; the builtin one is a raw socket error.
CONNECTION_ERRORS = (
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
    ConnectionError,
)

WaitCallback = Callable[[float, str], None]
NoticeCallback = Callable[[str], None]
