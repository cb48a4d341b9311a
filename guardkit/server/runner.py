"""Running the app under uvicorn: on a socket bound first, in the foreground or in a thread.

Binding before the data directory is touched makes a second server on the same address exit at
once instead of opening the store; uvicorn's graceful shutdown lets in-flight requests finish
and the lifespan then drains the group-commit queue before closing the store.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

import uvicorn
from starlette.types import ASGIApp

__all__ = ["bind", "parse_bind", "serve", "serve_in_thread"]


def parse_bind(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) into its parts; raises ``ValueError``."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets that say they are TCP,
    # and without it every response waits ~40 ms for the client's delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


class _Server(uvicorn.Server):
    """uvicorn's server, telling the app when shutdown begins (before it waits for requests)."""

    def __init__(self, config: uvicorn.Config, on_exit: Callable[[], None] | None) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._on_exit is not None:
            self._on_exit()
        super().handle_exit(sig, frame)


def _server(
    app: ASGIApp, log_level: str, on_exit: Callable[[], None] | None = None
) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=30,
        server_header=False,
    )
    return _Server(config, on_exit)


def serve(
    app: ASGIApp,
    sock: socket.socket,
    *,
    log_level: str = "info",
    on_exit: Callable[[], None] | None = None,
) -> None:
    """Serve until SIGINT/SIGTERM, then finish in-flight requests and shut down.

    ``on_exit`` runs as soon as the signal arrives (the app's long-polls answer at once).
    """
    _server(app, log_level, on_exit).run(sockets=[sock])


@contextmanager
def serve_in_thread(
    app: ASGIApp, host: str = "127.0.0.1", port: int = 0, *, log_level: str = "warning"
) -> Iterator[str]:
    """Serve ``app`` on a background thread; yields its base URL and stops it on exit."""
    sock = bind(host, port)
    server = _server(app, log_level)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the guard server did not start")
        threading.Event().wait(0.01)
    try:
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()
