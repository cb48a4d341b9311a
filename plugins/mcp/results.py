"""Tool results as the model will read them: hidden characters shown escaped, or withheld.

A server's answer goes to the model as its text blocks (and the text of embedded resources). A
character a reader cannot see there (ANSI escapes' ``ESC``, bidirectional overrides, zero-width
and tag characters: ``guardkit._visible``) hides instructions from the human reading the
transcript, so the proxy writes each as its ``\\uXXXX`` escape (``Results.ESCAPE``, the
default) or withholds the whole result (``Results.REFUSE``); either way the outcome it reports
says which characters it found. ``structuredContent`` is data for programs and passes as sent.

On the path of every call: text without any such character (almost every result) is told apart
with a few C-speed string scans, about 25 µs for 10 KB of ASCII and 75 µs of other text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from enum import StrEnum
from typing import Any

from guardkit._visible import escape_hidden, hidden_in

__all__ = ["Results", "shown"]

# The control characters of ASCII that are hidden (all but tab, newline and carriage return).
_ASCII_HIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# The hidden characters ``str.isprintable`` lets through (``guardkit._visible._IGNORABLE``).
_PRINTABLE_HIDDEN = re.compile(
    "[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\U000e0100-\U000e01ef]"
)


class Results(StrEnum):
    """What the proxy does with a tool result holding characters a reader cannot see."""

    #: Each is shown as its ``\\uXXXX`` escape (the default).
    ESCAPE = "escape"
    #: The client gets an error result instead; the call still ran and is reported.
    REFUSE = "refuse"


def _clean(text: str) -> bool:
    if text.isascii():
        return _ASCII_HIDDEN.search(text) is None
    # isprintable is False for every format, control and separator character, and for some
    # visible ones (no-break spaces, unassigned code points): those take the exact path.
    flat = text.replace("\n", "").replace("\t", "").replace("\r", "")
    return flat.isprintable() and _PRINTABLE_HIDDEN.search(text) is None


def _texts(result: Mapping[str, Any]) -> Iterator[tuple[int, str | None, str]]:
    """``(block index, resource key or None, text)`` for each text the model reads."""
    for index, block in enumerate(result.get("content") or ()):
        if not isinstance(block, Mapping):
            continue
        text = block.get("text")
        if block.get("type") == "text" and isinstance(text, str):
            yield index, None, text
        resource = block.get("resource")
        if block.get("type") == "resource" and isinstance(resource, Mapping):
            inner = resource.get("text")
            if isinstance(inner, str):
                yield index, "resource", inner


def shown(result: dict[str, Any], mode: Results) -> tuple[dict[str, Any], str]:
    """``result`` as the client gets it, and what was found (``""`` for nothing)."""
    found: set[str] = set()
    changed: dict[tuple[int, str | None], str] = {}
    for index, key, text in _texts(result):
        if _clean(text):
            continue
        hidden = hidden_in(text)
        if hidden:
            found |= hidden
            changed[(index, key)] = escape_hidden(text)
    if not found:
        return result, ""
    listed = escape_hidden("".join(sorted(found)))
    if mode is Results.REFUSE:
        text = (
            f"Error: the tool's result held characters a reader cannot see ({listed}), so the "
            "proxy withheld it. The tool did run; do not retry, tell a human."
        )
        refused = {"content": [{"type": "text", "text": text}], "isError": True}
        if "resultType" in result:
            refused["resultType"] = result["resultType"]
        return refused, f"result withheld: it held hidden characters ({listed})"
    content = list(result["content"])
    for (index, key), text in changed.items():
        block = dict(content[index])
        if key is None:
            block["text"] = text
        else:
            block[key] = {**block[key], "text": text}
        content[index] = block
    return {**result, "content": content}, f"hidden characters shown escaped ({listed})"
