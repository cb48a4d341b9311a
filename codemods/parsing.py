"""Parse a module with ``ast``, also one written for a newer Python than the running one.

PEP 701 (Python 3.12) lets an f-string's replacement field reuse the string's own quotes
(``f"{row["name"]}"``), span lines in a one-quote string, and hold backslashes and comments.
Python 3.11's ``ast`` rejects the whole module for one such string, and the scan would lose every
finding in it. ``blank_newer_fstrings`` finds each top-level f-string by PEP 701's rules and
replaces those the running parser cannot read by a plain string of the same lines and byte
columns (``"    "`` joined by line continuations), so every other node keeps its position. What
the blanked fields computed is lost to the analysis; the module's tools, loops and calls are not.
"""

from __future__ import annotations

import ast
import sys
import warnings

__all__ = ["blank_newer_fstrings", "parse_module"]

_PREFIX_LETTERS = frozenset("rRbBuUfF")
_PREFIXES = frozenset({"r", "u", "f", "b", "fr", "rf", "br", "rb"})
_OPENERS = "([{"
_CLOSERS = ")]}"


def parse_module(source: str | bytes, path: str = "<unknown>") -> ast.Module:
    """The module's tree (warnings of the parser silenced); on an interpreter older than the
    module's f-strings, the tree of its text with those blanked. Raises ``SyntaxError`` (or
    ``ValueError`` for a null byte) as ``ast.parse`` does when even that cannot be read."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(source, filename=path)
        except SyntaxError:
            blanked = _blanked(source) if sys.version_info < (3, 12) else None
            if blanked is None:
                raise
        return ast.parse(blanked, filename=path)


def _blanked(source: str | bytes) -> str | None:
    try:
        text = source.decode("utf-8") if isinstance(source, bytes) else source
    except UnicodeDecodeError:
        return None
    return blank_newer_fstrings(text)


class _Unreadable(Exception):
    """The text is not one this scanner can walk (an unterminated string, say)."""


def blank_newer_fstrings(source: str) -> str | None:
    """``source`` with the f-strings the running parser rejects blanked, or ``None`` when there
    is none to blank or one cannot be blanked in place (an empty line inside it)."""
    pieces: list[str] = []
    done = 0
    try:
        spans = list(_fstrings(source))
    except _Unreadable:
        return None
    for start, end in spans:
        text = source[start:end]
        if _parses(text):
            continue
        blank = _blank(text)
        if blank is None:
            return None
        pieces += [source[done:start], blank]
        done = end
    if not pieces:
        return None
    return "".join(pieces) + source[done:]


def _parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(f"(\n{text}\n)", mode="eval")
    except SyntaxError:
        return False
    return True


def _blank(text: str) -> str | None:
    """A plain string literal over the same lines, each line as long in UTF-8 bytes."""
    start = len(text) - len(text.lstrip("rRbBuUfF"))
    if text[start : start + 3] in {'"""', "'''"}:  # holds any line, an empty one too
        inside = text[start + 3 : -3]
        kept = "".join(c if c in "\r\n" else " " * _width(c) for c in inside)
        return " " * start + '"""' + kept + '"""'
    lines = text.split("\n")
    if len(lines) == 1:
        return '"' + " " * (_width(text) - 2) + '"'
    out: list[str] = []
    for index, line in enumerate(lines):
        ending = "\r" if line.endswith("\r") else ""
        width = _width(line) - len(ending)
        if index == 0:  # ``f"{`` at least
            piece = '"' + " " * (width - 3) + '"\\'
        elif index == len(lines) - 1:  # ``}"`` at least
            piece = '"' + " " * (width - 2) + '"'
        elif width:
            piece = " " * (width - 1) + "\\"
        else:  # nowhere to put the continuation
            return None
        out.append(piece + ending)
    return "\n".join(out)


def _width(text: str) -> int:
    return len(text.encode("utf-8", errors="surrogatepass"))


def _fstrings(source: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each f-string outside any other string, prefix included."""
    found: list[tuple[int, int]] = []
    at, size = 0, len(source)
    while at < size:
        char = source[at]
        if char == "#":
            at = _line_end(source, at)
        elif char in "\"'":
            prefix = _prefix(source, at)
            end = _string_end(source, at, prefix)
            if "f" in prefix:
                found.append((at - len(prefix), end))
            at = end
        else:
            at += 1
    return found


def _line_end(source: str, at: int) -> int:
    end = source.find("\n", at)
    return len(source) if end < 0 else end


def _prefix(source: str, quote: int) -> str:
    """The string prefix before the quote at ``quote`` (``rf``, ``b``...), lower-cased."""
    start = quote
    while start > 0 and source[start - 1] in _PREFIX_LETTERS and quote - start < 2:
        start -= 1
    while start < quote:
        word = source[start:quote].lower()
        before = source[start - 1] if start else " "
        if word in _PREFIXES and not (before.isalnum() or before == "_"):
            return word
        start += 1
    return ""


def _string_end(source: str, at: int, prefix: str) -> int:
    """The index just past the string literal whose opening quote is at ``at``."""
    quote = source[at] * 3 if source.startswith(source[at] * 3, at) else source[at]
    formatted = "f" in prefix
    pos, size = at + len(quote), len(source)
    while pos < size:
        char = source[pos]
        if char == "\\":  # an escaped quote ends nothing, in a raw string too
            pos += 2
        elif source.startswith(quote, pos):
            return pos + len(quote)
        elif char == "\n" and len(quote) == 1 and not formatted:
            raise _Unreadable
        elif formatted and char == "{":
            pos = pos + 2 if source.startswith("{{", pos) else _field_end(source, pos)
        else:
            pos += 1
    raise _Unreadable


def _field_end(source: str, at: int) -> int:
    """The index just past the replacement field opened at ``at`` (PEP 701: any string, any
    bracket, comments and line breaks inside; a format spec after a top-level ``:``)."""
    depth, pos, size = 0, at + 1, len(source)
    while pos < size:
        char = source[pos]
        if char in "\"'":
            pos = _string_end(source, pos, _prefix(source, pos))
            continue
        if char == "#":
            pos = _line_end(source, pos)
            continue
        if char in _OPENERS:
            depth += 1
        elif char in _CLOSERS:
            if depth == 0:
                return pos + 1
            depth -= 1
        elif char == ":" and depth == 0:
            return _spec_end(source, pos + 1)
        pos += 1
    raise _Unreadable


def _spec_end(source: str, at: int) -> int:
    """The index just past a format spec's closing brace (nested fields allowed)."""
    pos, size = at, len(source)
    while pos < size:
        char = source[pos]
        if char == "{":
            pos = _field_end(source, pos)
            continue
        if char == "}":
            return pos + 1
        pos += 1
    raise _Unreadable
