"""Runtime enforcement: one process-wide audit hook that fences a guarded tool's body.

Outside a guarded call the hook costs one ``ContextVar.get``. Inside one (the context variable is
per thread and per asyncio task) it refuses, with ``PermissionError``:

* every path-taking event that changes the filesystem outside the tool's write roots: ``open``
  for writing, ``os.truncate``/``chmod``/``chown``/``utime``/xattrs, ``os.mkdir``/``rmdir``/
  ``remove``/``rename``/``symlink``/``link`` and ``shutil``'s copy, move, rmtree and archive
  events, with ``dir_fd``/``src_dir_fd``/``dst_dir_fd`` resolved and hard links refused
  (``guardkit.checks.fence_files``);
* ``socket.connect``/``sendto``/``sendmsg`` to an address none of the tool's egress rules allows,
  and name lookups (``getaddrinfo``, ``gethostbyname``) of hosts none of them names, so the
  lookup itself can't carry data out; the address is the one the socket really uses, so DNS
  rebinding, redirects and any pure-Python HTTP library (urllib, httpx, requests) are covered;
* ``subprocess.Popen``, ``os.system``, ``os.exec*``, ``os.posix_spawn``, ``os.spawn*``,
  ``os.fork``, ``os.kill`` and ``multiprocessing``'s spawn and forkserver start methods (which
  CPython does not audit: ``install`` wraps ``_posixsubprocess.fork_exec`` to raise an event)
  unless the tool allows subprocesses.

What it can't stop is listed, each with a test, in docs/tools.md ("What the fence cannot see").
Hooks can never be removed, so ``install()`` adds exactly one per process.
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

from guardkit.checks.addresses import format_address, parse_literal
from guardkit.checks.egress import EgressRule, lookup_name
from guardkit.checks.fence_files import OPERANDS, open_problem, operand_problem

__all__ = ["Fence", "Runtime", "enforcing", "install"]

_SPAWN_EVENTS = frozenset(
    {
        "subprocess.Popen",
        "os.system",
        "os.exec",
        "os.posix_spawn",
        "os.spawn",
        "os.fork",
        "os.forkpty",
        "os.kill",
        "os.killpg",
        "pty.spawn",
        "guardkit.fork_exec",
    }
)
_SEND_EVENTS = frozenset({"socket.connect", "socket.sendto", "socket.sendmsg"})
_LOOKUP_EVENTS = frozenset({"socket.getaddrinfo", "socket.gethostbyname"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Runtime:
    """Opt a tool into runtime enforcement; paths and egress rules add to what it allows.

    >>> @guardkit.tool(runtime=Runtime(write_roots=["/tmp/out"]), egress={"url": EgressRule()})
    """

    #: Roots a tool may change files under, besides its ``PathRule(write=True)`` roots.
    write_roots: Sequence[str] = ()
    #: May the tool start (or signal) processes?
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
    #: The write roots' real paths, resolved on the call's first file event.
    _real_roots: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    def _roots(self) -> list[str]:
        if len(self._real_roots) != len(self.write_roots):
            self._real_roots[:] = [os.path.realpath(root) for root in self.write_roots]
        return self._real_roots

    def file_problem(self, event: str, args: tuple[Any, ...]) -> str | None:
        """A path-taking event: every operand must stay under the write roots."""
        roots = self._roots()
        if event == "open":
            why = open_problem(args, roots)
            return None if why is None else f"{self.tool} may not write {why}"
        for path_at, fd_at, kind in OPERANDS[event]:
            if path_at >= len(args):
                continue
            dir_fd = args[fd_at] if fd_at is not None and fd_at < len(args) else None
            why = operand_problem(args[path_at], dir_fd, kind, roots)
            if why is not None:
                return f"{self.tool} may not {event.rsplit('.', 1)[-1]} {why}"
        return None

    def connect_problem(self, args: tuple[Any, ...]) -> str | None:
        sock, address = args[0], args[1]
        if address is None:
            return None  # ``sendmsg`` on a connected socket: its connect was checked
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
                shown = host if found is None else format_address(found)
                return f"{self.tool} may not connect to {shown}:{port}"
        return None

    def lookup_problem(self, args: tuple[Any, ...]) -> str | None:
        """A name lookup tells the resolver the name: only names an egress rule allows."""
        host = args[0] if args else None
        if host is None or (isinstance(host, str) and parse_literal(host) is not None):
            return None
        name = lookup_name(host)
        if name is not None and any(rule.host_allowed(name) for rule in self.egress):
            return None
        return f"{self.tool} may not look up {host!r}"

    def problem(self, event: str, args: tuple[Any, ...]) -> str | None:
        if event == "open" or event in OPERANDS:
            return self.file_problem(event, args)
        if event in _SEND_EVENTS:
            return self.connect_problem(args)
        if event in _LOOKUP_EVENTS:
            return self.lookup_problem(args)
        if event in _SPAWN_EVENTS and not self.subprocess:
            verb = "signal" if event.startswith("os.kill") else "start"
            return f"{self.tool} may not {verb} processes ({event})"
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
            _audit_fork_exec()
            _installed.append(True)


def _audit_fork_exec() -> None:
    """Make ``_posixsubprocess.fork_exec`` raise an audit event, as CPython's does not.

    ``subprocess`` raises ``subprocess.Popen`` before calling it, but ``multiprocessing``'s
    spawn and forkserver start methods call it directly (looked up at call time, so the wrapper
    sees them): without an event a fenced tool could start an unfenced child.
    """
    try:
        import _posixsubprocess
    except ImportError:  # pragma: no cover - Windows starts processes through _winapi
        return
    original = _posixsubprocess.fork_exec

    def fork_exec(*args: Any, **kwargs: Any) -> Any:
        sys.audit("guardkit.fork_exec", args[1] if len(args) > 1 else None)
        return original(*args, **kwargs)

    setattr(_posixsubprocess, "fork_exec", fork_exec)  # noqa: B010 - typeshed's signature differs


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
