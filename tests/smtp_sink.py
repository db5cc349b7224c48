"""A tiny SMTP server on 127.0.0.1 that keeps every message it receives: the mail server of browser tests
that follow a link from an e-mail (Django's SMTP backend talks to it as to a real one)."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import BinaryIO, cast


class SMTPSink:
    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self._arrived = threading.Condition()
        sink = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                sink._session(self.rfile, self.wfile)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])

    def _session(self, rfile: BinaryIO, wfile: BinaryIO) -> None:
        def say(line: str) -> None:
            wfile.write(f"{line}\r\n".encode())

        say("220 sink ESMTP")
        while True:
            raw = rfile.readline()
            if not raw:
                return
            verb = raw.decode("latin-1").strip()[:4].upper()
            if verb == "EHLO":
                say("250-sink")
                say("250 8BITMIME")
            elif verb == "DATA":
                say("354 End data with <CR><LF>.<CR><LF>")
                lines = []
                while (line := rfile.readline()) not in (b".\r\n", b".\n", b""):
                    lines.append(line[1:] if line.startswith(b"..") else line)
                message = cast(EmailMessage, message_from_bytes(b"".join(lines), policy=policy.default))
                with self._arrived:
                    self.messages.append(message)
                    self._arrived.notify_all()
                say("250 OK")
            elif verb == "QUIT":
                say("221 Bye")
                return
            elif verb in {"HELO", "MAIL", "RCPT", "RSET", "NOOP"}:
                say("250 OK")
            else:
                say("502 Not implemented")

    def wait_for(self, wanted: Callable[[EmailMessage], bool], timeout: float = 30) -> EmailMessage:
        """The first message received (or to come) for which `wanted` is true."""
        with self._arrived:
            found = self._arrived.wait_for(
                lambda: next((m for m in self.messages if wanted(m)), None), timeout
            )
        if found is None:
            raise AssertionError(
                f"no such message in {timeout} s; received: {[m['Subject'] for m in self.messages]}"
            )
        return found


def body(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None
    return str(cast(EmailMessage, part).get_content())


@contextmanager
def smtp_sink() -> Iterator[SMTPSink]:
    sink = SMTPSink()
    thread = threading.Thread(target=sink._server.serve_forever, daemon=True)
    thread.start()
    try:
        yield sink
    finally:
        sink._server.shutdown()
        sink._server.server_close()
