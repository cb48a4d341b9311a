"""A webhook receiver of our own on 127.0.0.1: verifies signatures with the documented snippet,
drops repeats by event id, and can fail or hold deliveries on purpose."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[2] / "docs" / "notifications.md"


def documented_verifier() -> Callable[..., bool]:
    """``verify_guardkit_signature`` exactly as docs/notifications.md shows it."""
    blocks = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), re.MULTILINE | re.DOTALL)
    (code,) = [b for b in blocks if "def verify_guardkit_signature" in b]
    scope: dict[str, Any] = {}
    exec(compile(code, str(DOC), "exec"), scope)
    verify: Callable[..., bool] = scope["verify_guardkit_signature"]
    return verify


@dataclass
class Hit:
    at: float
    event_id: str
    attempt: int
    status: int
    body: bytes


@dataclass
class Receiver:
    secret: str
    #: Answer 500 to this many requests first.
    fail_first: int = 0
    #: Hold the first request for an event of this type until ``release`` is set.
    hold_type: str | None = None
    #: Close a kept-alive connection idle this long (seconds), as servers do.
    idle_timeout: float | None = None
    hits: list[Hit] = field(default_factory=list)
    #: Event id -> body, each kept once (a repeat is dropped).
    accepted: dict[str, bytes] = field(default_factory=dict)
    duplicates: int = 0
    bad_signatures: int = 0
    holding: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        verify = documented_verifier()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a real receiver does

            def setup(self) -> None:
                self.timeout = receiver.idle_timeout  # read per connection: tests change it
                super().setup()

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                event_id = self.headers.get("Guardkit-Event-Id", "")
                status = receiver.take(
                    body,
                    event_id,
                    int(self.headers.get("Guardkit-Delivery-Attempt", "0")),
                    verify(receiver.secret, self.headers.get("Guardkit-Signature", ""), body),
                    self.headers.get("Guardkit-Event-Type", ""),
                )
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                """Quiet."""

            def handle(self) -> None:
                try:
                    super().handle()
                except TimeoutError:
                    self.close_connection = True  # idle too long: hang up, as servers do

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def take(self, body: bytes, event_id: str, attempt: int, signed: bool, kind: str) -> int:
        with self.lock:
            status = 200
            if not signed:
                self.bad_signatures += 1
                status = 401
            elif self.fail_first > 0:
                self.fail_first -= 1
                status = 500
            elif event_id in self.accepted:
                self.duplicates += 1
            else:
                self.accepted[event_id] = body
            self.hits.append(Hit(time.monotonic(), event_id, attempt, status, body))
            hold = status == 200 and kind == self.hold_type and not self.holding.is_set()
            if hold:
                self.holding.set()
        if hold:
            self.release.wait(30)
        return status

    def wait_for(self, count: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.accepted) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.accepted)} of {count} events after {timeout}s")
            time.sleep(0.02)

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
