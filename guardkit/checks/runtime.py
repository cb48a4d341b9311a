"""Runtime enforcement: one process-wide audit hook that fences a guarded tool's body.

Outside a guarded call the hook costs one ``ContextVar.get``. Inside one (the context variable is
per thread and per asyncio task) it refuses, with ``PermissionError``:

* ``open`` for writing (any of ``w a x +``, or ``O_WRONLY``/``O_RDWR``/``O_CREAT``/``O_TRUNC``/
  ``O_APPEND``) of a path whose real path is not under the tool's write roots;
* ``socket.connect``/``socket.sendto`` to an address none of the tool's egress rules allows; the
  address is the one the socket is really connecting to, so DNS rebinding, redirects and any
  pure-Python HTTP library (urllib, httpx, requests) are covered;
* ``subprocess.Popen``, ``os.system``, ``os.exec*``, ``os.posix_spawn``, ``os.spawn*`` and
  ``os.fork`` unless the tool allows subprocesses.

What it can't stop (PEP 578 hooks see only what CPython audits): C extensions that open files or
sockets themselves (pycurl, gRPC core, a database driver's own network code), ``ctypes`` calls into
libc, threads the tool starts (``threading`` does not copy the context, so they run unfenced), and
a hardlink to an outside file that already exists under a write root. Hooks can never be removed,
so ``install()`` adds exactly one per process.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from guardkit.checks.addresses import parse_literal
from guardkit.checks.egress import EgressRule
from guardkit.checks.paths import is_under

__all__ = ["Fence", "Runtime", "enforcing", "install"]

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_SPAWN_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "pty.spawn",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Runtime:
    """Opt a tool into runtime enforcement; paths and egress rules add to what it allows.

    >>> @guardkit.tool(runtime=Runtime(write_roots=["/tmp/out"]), egress={"url": EgressRule()})
    """

    #: Roots a tool may open files for writing under, besides its ``PathRule(write=True)`` roots.
    write_roots: Sequence[str] = ()
    #: May the tool start processes?
    subprocess: bool = False
    #: Where the body may connect, besides what its URL arguments' egress rules allow.
    egress: Sequence[EgressRule] = ()

    def __post_init__(self) -> None:
        if isinstance(self.write_roots, str):
            raise TypeError("Runtime.write_roots is a list of strings, not one string")
        object.__setattr__(self, "write_roots", tuple(self.write_roots))
        object.__setattr__(self, "egress", tuple(self.egress))
        if not all(isinstance(rule, EgressRule) for rule in self.egress):
            raise TypeError("Runtime.egress is a list of EgressRule")


@dataclass(frozen=True, slots=True, kw_only=True)
class Fence:
    """What one guarded call may do, as the hook checks it."""

    tool: str
    write_roots: tuple[str, ...] = ()
    egress: tuple[EgressRule, ...] = ()
    subprocess: bool = False
    #: Why operations were refused, in order (the decorator reports them).
    blocked: list[str] = field(default_factory=list)

    def open_problem(self, args: tuple[Any, ...]) -> str | None:
        path, mode, flags = args[0], args[1], args[2]
        writing = (isinstance(mode, str) and any(ch in mode for ch in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS
        )
        if not writing or isinstance(path, int):
            return None
        real = os.path.realpath(os.fsdecode(path))
        if any(is_under(real, os.path.realpath(root)) for root in self.write_roots):
            return None
        return f"{self.tool} may not write {real}"

    def connect_problem(self, args: tuple[Any, ...]) -> str | None:
        sock, address = args[0], args[1]
        if getattr(sock, "family", None) not in (socket.AF_INET, socket.AF_INET6):
            return f"{self.tool} may not connect to {address!r}"
        host, port = str(address[0]), int(address[1])
        literal = parse_literal(host)
        addresses = (
            [literal]
            if literal is not None
            else [parse_literal(str(info[4][0])) for info in socket.getaddrinfo(host, port)]
        )
        for found in addresses:
            if found is None or not any(
                port in rule.allow_ports and rule.address_problem(found) is None
                for rule in self.egress
            ):
                return f"{self.tool} may not connect to {found}:{port}"
        return None

    def problem(self, event: str, args: tuple[Any, ...]) -> str | None:
        if event == "open":
            return self.open_problem(args)
        if event in ("socket.connect", "socket.sendto"):
            return self.connect_problem(args)
        if event in _SPAWN_EVENTS and not self.subprocess:
            return f"{self.tool} may not start processes ({event})"
        return None


_active: ContextVar[Fence | None] = ContextVar("guardkit_fence", default=None)
_installed: list[bool] = []
_install_lock = threading.Lock()


def _hook(
    event: str, args: tuple[Any, ...], _get: Callable[[], Fence | None] = _active.get
) -> None:
    # Runs on every audited event in the process: outside a guarded call, one bound-method call.
    fence = _get()
    if fence is None:
        return
    # Our own realpath/getaddrinfo raise audit events too: check them unfenced.
    token = _active.set(None)
    try:
        why = fence.problem(event, args)
    finally:
        _active.reset(token)
    if why is not None:
        fence.blocked.append(why)
        raise PermissionError(f"blocked by guardkit: {why}")


def install(
    addaudithook: Callable[[Callable[[str, tuple[Any, ...]], None]], None] = sys.addaudithook,
) -> None:
    """Add the hook to this process, once; it can never be removed."""
    with _install_lock:
        if not _installed:
            addaudithook(_hook)
            _installed.append(True)


class _Fenced:
    """Sets the call's fence for the block (a class, not a generator: it runs on every call)."""

    __slots__ = ("_fence", "_token")

    def __init__(self, fence: Fence) -> None:
        self._fence = fence

    def __enter__(self) -> Fence | None:
        if not _installed:
            install()
        self._token = _active.set(self._fence)
        return self._fence

    def __exit__(self, *exc: object) -> None:
        _active.reset(self._token)


_UNFENCED: AbstractContextManager[Fence | None] = nullcontext()


def enforcing(fence: Fence | None) -> AbstractContextManager[Fence | None]:
    """Fence the block (installing the hook on first use); a None fence does nothing."""
    return _UNFENCED if fence is None else _Fenced(fence)
