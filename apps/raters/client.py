"""One chat-completions request to an OpenAI-compatible server, through the official ``openai`` package,
with the importers' policy at the network boundary (docs/models.md "Runs"). No Django.

* a ``429`` waits what ``Retry-After`` says (seconds or an HTTP date; `corpus.http.retry_after_seconds`),
  or backs off when it says nothing;
* a ``5xx``, a timeout or a dropped connection backs off exponentially (1, 2, 4, ... s, at most
  `MAX_BACKOFF`) and tries again, `MAX_ATTEMPTS` times in all, then raises `TransportError`;
* structured output is asked for (``response_format`` with the answer's JSON Schema); a server that
  refuses it with a 400 naming ``response_format`` is asked again without it, and the caller remembers
  (`Reply.structured`);
* any other 4xx (a wrong key, an unknown model) raises `TransportError` at once: retrying cannot help.

The API key is passed in by the caller, used for the request and never logged or returned.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import openai

from apps.corpus.http import retry_after_seconds

MAX_ATTEMPTS = 6
MAX_BACKOFF = 30.0
MAX_RETRY_AFTER = 300.0
NO_KEY = "no-key"  # local servers (vLLM, Ollama, llama.cpp) need none, the client needs a string

sleep: Callable[[float], None] = time.sleep
"""How the client waits (replaced in tests, which must not sleep through Retry-After)."""

__all__ = ["Reply", "TransportError", "complete", "make_client"]


class TransportError(Exception):
    """The server gave no answer after the retries, or refused the request for good (a 4xx)."""


@dataclass(frozen=True)
class Reply:
    text: str
    model_id: str
    input_tokens: int
    output_tokens: int
    structured: bool
    retries: int


def _backoff(failures: int) -> float:
    return float(min(2 ** (failures - 1), MAX_BACKOFF))


def _wait_for(error: openai.APIStatusError, failures: int) -> float:
    header = error.response.headers.get("retry-after")
    seconds = retry_after_seconds(header, time.time()) if header else None
    return min(seconds, MAX_RETRY_AFTER) if seconds is not None else _backoff(failures)


def make_client(*, base_url: str, api_key: str | None, timeout: float, concurrency: int = 4) -> openai.OpenAI:
    """One client for a run: its connection pool (as large as the run's concurrency) is shared by the
    run's threads (httpx's client is thread-safe)."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    return openai.OpenAI(
        base_url=base_url,
        api_key=api_key or NO_KEY,
        timeout=httpx.Timeout(timeout),
        max_retries=0,
        http_client=httpx.Client(limits=limits, timeout=httpx.Timeout(timeout)),
    )


def complete(
    client: openai.OpenAI,
    *,
    model: str,
    messages: Sequence[Mapping[str, str]],
    schema: Mapping[str, Any] | None,
    temperature: float,
    seed: int | None = None,
) -> Reply:
    """Ask once (with retries, module docstring) and return the first choice's text and what the
    server reported. ``schema`` None asks for plain JSON without structured output."""
    structured = schema is not None
    failures = 0
    last = ""
    while True:
        extra: dict[str, Any] = {}
        if structured and schema is not None:
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "labels", "schema": dict(schema), "strict": False},
            }
        if seed is not None:
            extra["seed"] = seed
        try:
            response = client.chat.completions.create(
                model=model,
                messages=list(messages),  # type: ignore[arg-type]
                temperature=temperature,
                **extra,
            )
        except openai.RateLimitError as exc:
            failures += 1
            wait, last = _wait_for(exc, failures), "429 Too Many Requests"
        except openai.APIStatusError as exc:
            if exc.status_code < 500:
                if structured and exc.status_code == 400 and "response_format" in str(exc):
                    structured = False  # a server without structured output: plain JSON
                    continue
                refused = f"{exc.status_code} {exc.message}"
                raise TransportError(f"the server refused the request: {refused}") from None
            failures += 1
            wait, last = _backoff(failures), f"status {exc.status_code}"
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            failures += 1
            wait, last = _backoff(failures), type(exc).__name__
        else:
            choice = response.choices[0] if response.choices else None
            usage = response.usage
            return Reply(
                text=(choice.message.content or "") if choice is not None else "",
                model_id=response.model or "",
                input_tokens=usage.prompt_tokens if usage is not None else 0,
                output_tokens=usage.completion_tokens if usage is not None else 0,
                structured=structured,
                retries=failures,
            )
        if failures >= MAX_ATTEMPTS:
            raise TransportError(f"no answer after {failures} attempts (last: {last})")
        sleep(wait)
