"""The rest of what a server tells the model, pinned like its tools: instructions, prompts,
resources and resource templates.

Each ``prompts/list``, ``resources/list`` and ``resources/templates/list`` page, and the
``instructions`` of the upstream's ``initialize`` result, passes here before a client sees it
(``Listing.see``):

- what is pinned of each item is what a client shows the model (``FIELDS``: a prompt's name,
  title, description and arguments; a resource's URI, name, title, description and MIME type;
  the instructions' text), pinned at first sight per agent and ``--server-name``, in the pin
  file's section of that kind (``pins``);
- every ``description`` and ``title`` in it, and the instructions, are shown with each character
  a reader cannot see as its ``\\uXXXX`` escape (the pin keeps what the server sent);
- an item that changed since it was pinned is held as ``OnChange`` says until an operator
  accepts the change (``guardkit mcp accept``): ``hide`` leaves it out (no instructions at all),
  ``deny`` and ``approval`` show the version that was pinned. Getting a changed prompt or reading
  a changed resource is refused with an error, whatever the flag: neither is a tool call a
  human could approve.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel

from guardkit._visible import escape_hidden

from .pin_records import PinRecord
from .pins import ITEM, Kind, PinFile, digest
from .vetting import OnChange, escape_texts

__all__ = ["FIELDS", "INSTRUCTIONS", "Listing"]

log = logging.getLogger("guardkit.mcp")

M = TypeVar("M", bound=BaseModel)

#: What is pinned of an item of each kind (the instructions are one item, ``{"text": ...}``).
FIELDS: dict[Kind, tuple[str, ...]] = {
    "prompts": ("name", "title", "description", "arguments"),
    "resources": ("uri", "name", "title", "description", "mimeType"),
    "resource_templates": ("uriTemplate", "name", "title", "description", "mimeType"),
    "instructions": ("text",),
}
#: The name the instructions are pinned and accepted under.
INSTRUCTIONS = "instructions"
_KEYS: dict[Kind, str] = {
    "prompts": "name",
    "resources": "uri",
    "resource_templates": "uriTemplate",
    "instructions": "text",
}


class Listing:
    """The proxy's view of one kind of its upstream's listings; see the module docstring."""

    def __init__(self, pins: PinFile, on_change: OnChange, accept_args: Callable[[], str]) -> None:
        self.pins = pins
        self.on_change = on_change
        self._accept_args = accept_args
        #: key -> (the digest the upstream offered, why it is held) for each held item
        self._held: dict[str, tuple[str, str]] = {}

    @property
    def item(self) -> str:
        return ITEM[self.pins.kind]

    def take_events(self) -> list[PinRecord]:
        return self.pins.take_events()

    def see(self, items: list[M]) -> list[M]:
        """Vet one page of the upstream's listing: the items to show, in its order."""
        kind = self.pins.kind
        fields = FIELDS[kind]
        listed = []
        for item in items:
            wire = item.model_dump(by_alias=True, mode="json", exclude_none=True)
            listed.append((item, str(wire[_KEYS[kind]]), wire))
        found = {key: {f: wire[f] for f in fields if f in wire} for _, key, wire in listed}
        self.pins.refresh()
        states = self.pins.record(found)
        shown: list[M] = []
        for item, key, wire in listed:
            if states[key] == "pinned":
                self._held.pop(key, None)
                shown.append(_escaped(item))
                continue
            why = self._why(key)
            self._held[key] = (digest(found[key]), why)
            log.warning("%s (held: --on-change %s)", why, self.on_change.value)
            if self.on_change is not OnChange.HIDE:
                pinned = self.pins.pinned(key) or found[key]
                base = {k: v for k, v in wire.items() if k not in fields}
                shown.append(_escaped(type(item).model_validate({**base, **pinned})))
        return shown

    def instructions(self, text: str | None) -> str | None:
        """What the client is told of the upstream's ``instructions``: escaped, pinned, held."""
        if text is None:
            return None
        self.pins.refresh()
        (state,) = self.pins.record({INSTRUCTIONS: {"text": text}}).values()
        if state == "pinned":
            return escape_hidden(text)
        why = self._why(INSTRUCTIONS)
        self._held[INSTRUCTIONS] = (digest({"text": text}), why)
        log.warning("%s (held: --on-change %s)", why, self.on_change.value)
        if self.on_change is OnChange.HIDE:
            return None
        pinned = self.pins.pinned(INSTRUCTIONS) or {"text": text}
        return escape_hidden(str(pinned["text"]))

    def refused(self, key: str) -> str | None:
        """Why getting or reading the item ``key`` is refused (it is held), or None."""
        held = self._held.get(key)
        if held is None:
            return None
        if self._accepted(key):
            return None
        return held[1]

    def holding(self) -> bool:
        return bool(self._held)

    def any_accepted(self) -> bool:
        """Whether any held item's change was accepted since (the pin file read again)."""
        found = False
        for key in list(self._held):
            found = self._accepted(key) or found
        return found

    def _accepted(self, key: str) -> bool:
        mark, _ = self._held[key]
        self.pins.refresh()
        if self.pins.state(key, mark) != "pinned":
            return False
        del self._held[key]
        return True

    def _why(self, key: str) -> str:
        return (
            f"the server changed {self.item} {escape_hidden(key)!r} since it was pinned in "
            f"{self.pins.where}; an operator reviews and accepts the change with: guardkit mcp "
            f"accept {self._accept_args()}{key if key == INSTRUCTIONS else repr(key)}"
        )


def _escaped(item: M) -> M:
    """``item`` with every description and title in it written visibly."""
    wire = item.model_dump(by_alias=True, mode="json", exclude_none=True)
    escaped = escape_texts(wire)
    if escaped == wire:
        return item
    log.warning(
        "%r: characters a reader cannot see in it, shown escaped", escape_hidden(str(wire["name"]))
    )
    return type(item).model_validate(escaped)
