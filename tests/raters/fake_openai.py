"""A local fake OpenAI-compatible server (``POST /v1/chat/completions``) for the model raters' tests and
benchmark: deterministic answers, and on request 429 with Retry-After, 500s, malformed JSON, slow
answers (timeouts), no structured output, and a model id that changes during a run."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TITLE = re.compile(r"^Title: (.*)$", re.MULTILINE)


@dataclass
class Fault:
    """What the server does instead of answering, once: a status (with headers), a delay, or content."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content: str | None = None


def first_choices(body: dict[str, Any]) -> str:
    """A valid answer read off the request's JSON Schema: the first category of every required dimension."""
    schema = body["response_format"]["json_schema"]["schema"]
    finding = schema["properties"]["findings"]["items"]
    values: dict[str, Any] = {}
    for key in finding["required"]:
        spec = finding["properties"][key]
        values[key] = [spec["items"]["enum"][0]] if spec["type"] == "array" else spec["enum"][0]
    return json.dumps({"findings": [values]})


@dataclass
class FakeServer:
    answer: Callable[[str], str] | None = None
    """The reply's content for the title of the item asked about (None: `first_choices`)."""
    delay: float = 0.0
    structured: bool = True
    model_id: Callable[[int], str] = lambda n: "fake-model-1"
    faults: list[Fault] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def take(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Fault | None]:
        with self.lock:
            self.requests.append(body)
            self.headers.append(headers)
            return len(self.requests), (self.faults.pop(0) if self.faults else None)


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send(
            self, status: int, payload: dict[str, Any] | str, headers: dict[str, str] | None = None
        ) -> None:
            data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            with suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            number, fault = server.take(body, dict(self.headers))
            if server.delay:
                time.sleep(server.delay)
            if fault is not None and fault.delay:
                time.sleep(fault.delay)
            if fault is not None and fault.status != 200:
                error = {"error": {"message": f"fake {fault.status}", "type": "fake", "code": None}}
                self._send(fault.status, error, fault.headers)
                return
            if "response_format" in body and not server.structured:
                message = "response_format is not supported by this server"
                self._send(400, {"error": {"message": message, "type": "invalid_request_error"}})
                return
            prompt = body["messages"][-1]["content"]
            match = TITLE.search(prompt)
            if fault is not None and fault.content is not None:
                content = fault.content
            elif server.answer is None:
                content = first_choices(body)
            else:
                content = server.answer(match.group(1) if match else "")
            self._send(
                200,
                {
                    "id": f"chatcmpl-{number}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": server.model_id(number),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 12, "total_tokens": 0},
                },
            )

    return Handler


@contextmanager
def fake_server(server: FakeServer) -> Iterator[FakeServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(server))
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
