"""What the proxy shows a client of each upstream tool, and why it holds back the others.

Every ``tools/list`` page read from the upstream passes here (``Vetting.see``) before a client
or the argument check sees it:

- names the proxy never forwards are refused (``names.NameRules``), as are names listed
  twice, and unlisted tools are hidden when ``--unlisted hide``;
- what the model will read is made visible: in the description and title, and in every
  ``description`` and ``title`` of the input and output schemas, each character a reader cannot
  see (ANSI escape sequences' ``ESC``, bidirectional overrides, zero-width and tag characters)
  is shown as its ``\\uXXXX`` escape. Any other string of a schema with one (an ``enum``
  value, a ``pattern``, a property's name) can't be escaped without changing what the tool
  accepts, so the tool is refused;
- every tool shown is pinned at first sight (``pins``); one that changed since is held as
  ``OnChange`` says, and the client is shown the version that was pinned, never the change.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Literal

from mcp.types import Tool

from guardkit._visible import escape_hidden, is_hidden

from .names import NameRules
from .pin_records import PinRecord
from .pins import PinFile, definition, digest
from .schemas import ToolSchemas

__all__ = ["OnChange", "Seen", "Vetting", "escape_texts"]

log = logging.getLogger("guardkit.mcp")

_TEXT_KEYS = ("description", "title")


class OnChange(StrEnum):
    """What the proxy does with a tool whose definition changed since it was pinned."""

    #: Left out of ``tools/list``; a call to it is denied (``tool_changed``),
    #: without a scar: the server changed, not the agent.
    HIDE = "hide"
    #: Listed as it was pinned; every call is denied (``tool_changed``), without a scar.
    DENY = "deny"
    #: Listed as it was pinned (the default); every call waits for a human's approval until the
    #: change is accepted (``guardkit mcp accept``) or is refused after the approval timeout.
    APPROVAL = "approval"


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """One upstream tool as the proxy last read it."""

    #: ``shown``: listed (as ``tool``); ``hidden``: not listed and not pinned (unlisted by the
    #: policy); ``refused``: never listed, calls denied (``why``); ``changed``: held (``why``).
    state: Literal["shown", "hidden", "refused", "changed"]
    #: What the client is shown (escaped; the pinned version of a changed tool).
    tool: Tool | None = None
    #: The digest of the definition the upstream gave (what a call is recorded against).
    digest: str = ""
    why: str = ""


class Vetting:
    """The proxy's view of its upstream's tools; see the module docstring."""

    def __init__(
        self,
        pins: PinFile,
        schemas: ToolSchemas,
        *,
        allowed: frozenset[str] | None,
        hide_unlisted: bool,
        ledger_name: Callable[[str], str],
        policy_names: Iterable[str],
        on_change: OnChange,
    ) -> None:
        self.pins = pins
        self.on_change = on_change
        self._schemas = schemas
        self._allowed = allowed
        self._hide = hide_unlisted and allowed is not None
        self._ledger_name = ledger_name
        self._names = NameRules(policy_names)
        self._seen: dict[str, Seen] = {}

    def take_events(self) -> list[PinRecord]:
        """The pin events of the listings vetted since the last call, named as in the ledger."""
        return [replace(e, name=self._ledger_name(e.name)) for e in self.pins.take_events()]

    def forget(self) -> None:
        """The upstream's tools changed: what was seen is stale."""
        self._seen.clear()

    def seen(self, name: str) -> Seen | None:
        """The tool ``name`` as last listed (``None``: not listed since the last change)."""
        return self._seen.get(name)

    def refused(self, name: str) -> str | None:
        """Why a call to ``name`` is refused on its name alone, or None."""
        return self._names.problem(name)

    def see(self, tools: list[Tool]) -> list[Tool]:
        """Vet one page of the upstream's listing: the tools to show, in its order."""
        current: dict[str, tuple[Tool, dict[str, Any]]] = {}
        for tool in tools:
            problem = self._problem(tool)
            if problem is not None:
                self._seen[tool.name] = Seen(state="refused", why=problem)
                continue
            if self._hide and self._ledger_name(tool.name) not in (self._allowed or ()):
                self._seen[tool.name] = Seen(state="hidden")
                continue
            current[tool.name] = (tool, definition(tool))
        self.pins.refresh()
        states = self.pins.record({name: found for name, (_, found) in current.items()})
        for name, (tool, found) in current.items():
            mark = digest(found)
            if states[name] == "pinned":
                self._seen[name] = Seen(state="shown", tool=_escaped(tool), digest=mark)
                continue
            pinned = self.pins.pinned(name) or found
            why = (
                f"the server changed tool {name!r} since it was pinned in {self.pins.where}; "
                f"an operator reviews and accepts the change with: guardkit mcp accept "
                f"{self.accept_args()}{name}"
            )
            log.warning("%s (%s)", why, f"held: --on-change {self.on_change.value}")
            shown = None
            if self.on_change is not OnChange.HIDE:
                shown = _escaped(Tool.model_validate(pinned))
            self._seen[name] = Seen(state="changed", tool=shown, digest=mark, why=why)
        return [
            seen.tool
            for tool in tools
            if (seen := self._seen[tool.name]).tool is not None and seen.state != "refused"
        ]

    def holding(self) -> bool:
        """Whether a tool of the last listing is held (changed since it was pinned)."""
        return any(seen.state == "changed" for seen in self._seen.values())

    def any_accepted(self) -> bool:
        """Whether the change of any held tool was accepted since (the pin file read again)."""
        held = [name for name, seen in list(self._seen.items()) if seen.state == "changed"]
        found = False
        for name in held:  # every one, not only up to the first
            found = self.accepted(name) or found
        return found

    def accepted(self, name: str) -> bool:
        """Whether a held tool's change was accepted since (the pin file is read again)."""
        seen = self._seen.get(name)
        if seen is None or seen.state != "changed":
            return False
        self.pins.refresh()
        if self.pins.state(name, seen.digest) != "pinned":
            return False
        pinned = self.pins.pinned(name)
        assert pinned is not None
        self._seen[name] = Seen(
            state="shown", tool=_escaped(Tool.model_validate(pinned)), digest=seen.digest
        )
        return True

    def _problem(self, tool: Tool) -> str | None:
        found = self.refused(tool.name)
        if found is not None:
            return found
        if self._schemas.duplicated(tool.name):
            return "the server lists more than one tool by that name"
        for schema in (tool.input_schema, tool.output_schema):
            where = _hidden_constraint(schema)
            if where is not None:
                return (
                    f"its schema holds characters a reader cannot see at {where}, where "
                    "escaping them would change what the tool accepts"
                )
        return None

    def accept_args(self) -> str:
        parts = [f"--agent {self.pins.agent}"]
        if self.pins.server:
            parts.append(f"--server-name {self.pins.server}")
        if self.pins.path is not None:
            parts.append(f"--pins {self.pins.path}")
        return " ".join(parts) + " "


def _escaped(tool: Tool) -> Tool:
    """``tool`` with every description and title written visibly (the rest is left alone)."""
    update: dict[str, Any] = {}
    for key in _TEXT_KEYS:
        value = getattr(tool, key)
        if isinstance(value, str) and escape_hidden(value) != value:
            update[key] = escape_hidden(value)
    for key in ("input_schema", "output_schema"):
        value = getattr(tool, key)
        if value is not None:
            escaped = escape_texts(value)
            if escaped != value:
                update[key] = escaped
    if not update:
        return tool
    log.warning(
        "tool %r: characters a reader cannot see in its %s, shown escaped",
        escape_hidden(tool.name),
        ", ".join(sorted(update)),
    )
    return tool.model_copy(update=update)


def escape_texts(value: Any, key: str | None = None) -> Any:
    """``value`` with every string under a ``description`` or ``title`` key escaped."""
    if isinstance(value, Mapping):
        return {k: escape_texts(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [escape_texts(item) for item in value]
    if isinstance(value, str) and key in _TEXT_KEYS:
        return escape_hidden(value)
    return value


def _hidden_constraint(value: Any, path: str = "schema", key: str | None = None) -> str | None:
    """Where a schema holds a hidden character outside its descriptions and titles."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if any(is_hidden(ch) for ch in str(k)):
                return f"{path} (a key)"
            found = _hidden_constraint(v, f"{path}.{escape_hidden(str(k))}", str(k))
            if found is not None:
                return found
        return None
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _hidden_constraint(item, f"{path}[{index}]")
            if found is not None:
                return found
        return None
    if isinstance(value, str) and key not in _TEXT_KEYS and any(is_hidden(ch) for ch in value):
        return path
    return None
