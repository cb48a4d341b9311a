"""Trust on first use for an upstream's tools: what each tool said it is, pinned in a file.

The same holds for the rest of what the server tells the model (``listings``): its
``instructions``, and its ``prompts``, ``resources`` and ``resource_templates`` as listed, each
kind a section of its own beside ``tools`` (``PinFile``'s ``kind``).

The first time the proxy lists a tool to a client, the tool's name, title, description, input
and output schemas and annotations (everything the model reads of it) are recorded with their
digest, under the agent and the proxy's ``server_name``. A later listing that differs (a "rug
pull") is recorded beside the pin as the version the server *offers*, and the proxy holds the
tool (``vetting.OnChange``) until an operator reviews the difference and accepts it
(``guardkit mcp accept``), which makes the offered version the pinned one.

The file is JSON, beside the ledger by default (``guard.db`` → ``guard.db.mcp-pins.json``)::

    {"guardkit_mcp_pins": 1, "agents": {"files-bot": {"servers": {"": {"tools": {
        "read_file": {"digest": "sha256:…", "pinned_at": "…", "pinned_by": "first use",
                      "definition": {…}, "offered": {"digest": …, "seen_at": …, "definition": …}}
    }}}}}}

Several proxies may share it (one per server in front of one agent, or one per client): every
write takes a lock file beside it, reads the file afresh, changes only its own tools and
replaces the file whole, so a reader never sees half of one.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mcp.types import Tool

from guardkit._canonical import canonical_json, sha256_hex
from guardkit._visible import escape_hidden

from .pin_records import PinRecord

__all__ = [
    "KINDS",
    "PIN_FIELDS",
    "Accepted",
    "agents",
    "PinFile",
    "PinState",
    "default_pin_path",
    "definition",
    "diff",
    "digest",
]

#: The fields of a tool that are pinned: what a client shows the model.
PIN_FIELDS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
_FORMAT = "guardkit_mcp_pins"
_VERSION = 1
#: Where the pins of a proxy started without a file live (``--pins`` unset, no SQLite ledger).
_MEMORY = "(memory)"

#: What a pin file pins, each in its own section: the server's tools, prompts, resources and
#: resource templates as listed, and its instructions (one item, ``instructions``).
Kind = Literal["tools", "prompts", "resources", "resource_templates", "instructions"]
KINDS: tuple[Kind, ...] = ("tools", "prompts", "resources", "resource_templates", "instructions")
#: How one item of each kind is called (in the ledger's pin records and ``accept``'s output).
ITEM: dict[Kind, str] = {
    "tools": "tool",
    "prompts": "prompt",
    "resources": "resource",
    "resource_templates": "resource template",
    "instructions": "instructions",
}

#: ``pinned``: the tool is as it was pinned (or was pinned just now); ``changed``: it differs.
PinState = Literal["pinned", "changed"]


def definition(tool: Tool) -> dict[str, Any]:
    """What is pinned of ``tool``: its ``PIN_FIELDS`` as on the wire (absent ones left out)."""
    wire = tool.model_dump(by_alias=True, mode="json", exclude_none=True)
    return {key: wire[key] for key in PIN_FIELDS if key in wire}


def digest(found: Mapping[str, Any]) -> str:
    """``sha256:`` and the hex digest of a definition's canonical JSON."""
    return "sha256:" + sha256_hex(canonical_json(found))


def default_pin_path(db: str) -> Path | None:
    """The pin file beside an embedded SQLite ledger (``None`` in memory or on PostgreSQL)."""
    if db.startswith(("postgresql://", "postgres://")):
        return None
    path = db.removeprefix("sqlite:///")
    if path in (":memory:", ""):
        return None
    return Path(path + ".mcp-pins.json")


def diff(old: Mapping[str, Any] | None, new: Mapping[str, Any], name: str) -> str:
    """A unified diff of two definitions, hidden characters escaped (safe for a terminal)."""

    def lines(value: Mapping[str, Any] | None) -> list[str]:
        if value is None:
            return []
        text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
        return escape_hidden(text).splitlines(keepends=True)

    return "".join(
        difflib.unified_diff(lines(old), lines(new), f"{name} (pinned)", f"{name} (offered)")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Accepted:
    """One tool an operator accepted: its name, and the pinned and offered definitions."""

    tool: str
    old: dict[str, Any] | None
    new: dict[str, Any]
    #: What was accepted: ``tool``, ``prompt``, ``resource``... (``ITEM``).
    kind: str = "tool"

    def record(self, by: str) -> PinRecord:
        """The ledger's record of this accept, by ``by``."""
        previous = None if self.old is None else digest(self.old)
        return PinRecord(
            code="pin_accepted",
            kind=self.kind,
            name=self.tool,
            digest=digest(self.new),
            previous=previous,
            by=by,
        )


class PinFile:
    """The pins of one agent's tools from one upstream (``server`` is its ``server_name``).

    ``path`` ``None`` keeps them in memory for the proxy's life (a rug pull after the first
    listing is still caught; a restart pins afresh).
    """

    def __init__(
        self, path: Path | None, agent: str, server: str | None, kind: Kind = "tools"
    ) -> None:
        self.path = path
        self.agent = agent
        self.server = server or ""
        self.kind: Kind = kind
        self._memory: dict[str, Any] = {}
        self._seen: tuple[int, int, int] | None = None
        self._tools: dict[str, Any] = {}
        self._events: list[PinRecord] = []

    @property
    def where(self) -> str:
        return _MEMORY if self.path is None else str(self.path)

    # -- reading --------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the file again if it changed since it was last read (an ``accept`` elsewhere)."""
        if self.path is None:
            self._tools = self._section(self._memory)
            return
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            self._seen, self._tools = None, {}
            return
        stamp = (found.st_mtime_ns, found.st_size, found.st_ino)
        if stamp != self._seen:
            self._tools = self._section(_read(self.path))
            self._seen = stamp

    def pinned(self, name: str) -> dict[str, Any] | None:
        """The pinned definition of tool ``name``, if it has one."""
        entry = self._tools.get(name)
        return None if entry is None else dict(entry["definition"])

    def state(self, name: str, found: str) -> PinState | None:
        """How digest ``found`` stands against ``name``'s pin (``None``: not pinned yet)."""
        entry = self._tools.get(name)
        if entry is None:
            return None
        return "pinned" if entry["digest"] == found else "changed"

    def take_events(self) -> list[PinRecord]:
        """What this pin file's writes pinned or first saw changed since the last call (each
        once, by the proxy whose write it was), for the ledger."""
        events, self._events = self._events, []
        return events

    # -- writing --------------------------------------------------------------------------------

    def record(self, seen: Mapping[str, dict[str, Any]]) -> dict[str, PinState]:
        """Pin each definition of ``seen`` (by tool name) that has no pin yet; note the others
        that differ from their pin as offered. How each stands, read under the lock."""
        marks = {name: digest(found) for name, found in seen.items()}
        if not any(self._stale(name, mark) for name, mark in marks.items()):
            return {name: self.state(name, mark) or "pinned" for name, mark in marks.items()}
        states: dict[str, PinState] = {}
        events: list[PinRecord] = []
        with self._writing() as data:
            tools = self._section(data, create=True)
            now = _now()
            for name, found in seen.items():
                mark = marks[name]
                entry = tools.get(name)
                if entry is None:
                    tools[name] = {
                        "digest": mark,
                        "pinned_at": now,
                        "pinned_by": "first use",
                        "definition": found,
                    }
                    states[name] = "pinned"
                    events.append(
                        PinRecord(
                            code="pin_first_use", kind=ITEM[self.kind], name=name, digest=mark
                        )
                    )
                elif entry["digest"] == mark:
                    entry.pop("offered", None)  # the server went back to the pinned version
                    states[name] = "pinned"
                else:
                    offered = entry.get("offered")
                    if offered is None or offered["digest"] != mark:
                        entry["offered"] = {"digest": mark, "seen_at": now, "definition": found}
                        events.append(
                            PinRecord(
                                code="pin_changed",
                                kind=ITEM[self.kind],
                                name=name,
                                digest=mark,
                                previous=entry["digest"],
                            )
                        )
                    states[name] = "changed"
        self._events.extend(events)
        return states

    def _stale(self, name: str, mark: str) -> bool:
        # Whether recording ``mark`` for ``name`` would change the file (else no write).
        entry = self._tools.get(name)
        if entry is None:
            return True
        if entry["digest"] == mark:
            return "offered" in entry
        offered = entry.get("offered") or {}
        return bool(offered.get("digest") != mark)

    def accept(
        self,
        names: tuple[str, ...],
        by: str,
        *,
        dry_run: bool = False,
        before_write: Callable[[list[Accepted]], None] | None = None,
    ) -> list[Accepted]:
        """Make the offered version of each tool of ``names`` (all of them if empty) the pinned
        one. Raises ``LookupError`` naming a tool that offers nothing to accept.
        ``before_write`` is called with what is accepted, under the lock, before the file is
        written (not on a dry run): what it raises leaves the file as it was."""
        done: list[Accepted] = []
        with self._writing(write=not dry_run) as data:
            tools = self._section(data, create=True)
            offering = sorted(name for name, entry in tools.items() if "offered" in entry)
            wanted = list(names) or offering
            unknown = [name for name in wanted if name not in offering]
            if unknown:
                raise LookupError(
                    f"nothing to accept for {', '.join(map(repr, unknown))} in {self.where} "
                    f"({self.describe()}): {self.kind} with a change waiting are "
                    f"{', '.join(offering) or 'none'}"
                )
            for name in wanted:
                entry = tools[name]
                offered = entry.pop("offered")
                done.append(
                    Accepted(
                        tool=name,
                        old=entry["definition"],
                        new=offered["definition"],
                        kind=ITEM[self.kind],
                    )
                )
                entry.update(
                    digest=offered["digest"],
                    pinned_at=_now(),
                    pinned_by=by,
                    definition=offered["definition"],
                    previous=entry["digest"],
                )
            if before_write is not None and done and not dry_run:
                before_write(done)
        return done

    def offering(self) -> list[str]:
        """The items with a change waiting to be accepted (the file read again)."""
        self.refresh()
        return sorted(name for name, entry in self._tools.items() if "offered" in entry)

    def describe(self) -> str:
        server = f", server {self.server!r}" if self.server else ""
        return f"agent {self.agent!r}{server}"

    def _section(self, data: dict[str, Any], *, create: bool = False) -> dict[str, Any]:
        if not create:
            found = data.get("agents", {}).get(self.agent, {}).get("servers", {})
            return dict(found.get(self.server, {}).get(self.kind, {}))
        agent = data.setdefault("agents", {}).setdefault(self.agent, {})
        server = agent.setdefault("servers", {}).setdefault(self.server, {})
        items: dict[str, Any] = server.setdefault(self.kind, {})
        return items

    @contextlib.contextmanager
    def _writing(self, *, write: bool = True) -> Iterator[dict[str, Any]]:
        if self.path is None:
            data = json.loads(json.dumps(self._memory))
            yield data  # what the block raises leaves the pins as they were
            if write:
                self._memory = data
            self._tools = self._section(self._memory)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(self.path.with_name(self.path.name + ".lock")):
            data = _read(self.path)
            yield data
            if write:
                _write(self.path, data)
        self._seen = None
        self.refresh()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {_FORMAT: _VERSION, "agents": {}}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(
            f"the MCP pin file {path} is not JSON ({exc}); restore it, or move it away to pin "
            "every tool afresh"
        ) from None
    if not isinstance(data, dict) or data.get(_FORMAT) != _VERSION:
        raise ValueError(f"{path} is not a guardkit MCP pin file (version {_VERSION})")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    handle, temp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+b") as lock:
        if sys.platform != "win32":
            import fcntl

            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        else:  # pragma: no cover - exercised on Windows only
            import msvcrt

            lock.seek(0)
            msvcrt.locking(lock.fileno(), msvcrt.LK_LOCK, 1)
        yield


def agents(path: Path) -> list[str]:
    """The agents the pin file at ``path`` holds pins for."""
    return sorted(_read(path).get("agents", {}))
