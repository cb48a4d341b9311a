"""Split a line the fix made too long, the way black and ``ruff format`` would.

An inserted keyword (``middleware=[GuardMiddleware()]``), a renamed callee or a statement
re-indented under ``with guardkit.model_turn():`` can push a line past the host's line length,
and the host's linter (E501) or formatter check would then fail on guardkit's diff. ``fit``
splits every new one-line statement that is too long with black's right-hand split: at the
last bracket pair, the body on one indented line if it fits, else one element per line with a
trailing comma, each element split again if it is still too long. Lines the host already had
are never touched.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass

__all__ = ["fit"]

_OPEN = {"(": ")", "[": "]", "{": "}"}
_INDENT = "    "


@dataclass(frozen=True, slots=True)
class _Token:
    text: str
    start: int
    end: int


def _tokens(text: str) -> list[_Token] | None:
    """Tokens of one logical line (offsets into ``text``), or ``None`` when it does not
    tokenize as a single line."""
    found: list[_Token] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT):
                continue
            if tok.start[0] != 1 or tok.end[0] != 1:
                return None
            found.append(_Token(tok.string, tok.start[1], tok.end[1]))
    except (tokenize.TokenError, SyntaxError):
        return None
    return found


def _pairs(tokens: list[_Token]) -> dict[int, int]:
    """Index of each closing bracket -> index of its opening bracket."""
    stack: list[int] = []
    pairs: dict[int, int] = {}
    for index, tok in enumerate(tokens):
        if tok.text in _OPEN:
            stack.append(index)
        elif tok.text in _OPEN.values() and stack:
            pairs[index] = stack.pop()
    return pairs


def _top_level_commas(text: str) -> list[int] | None:
    tokens = _tokens(text)
    if tokens is None:
        return None
    depth = 0
    commas: list[int] = []
    for tok in tokens:
        if tok.text in _OPEN:
            depth += 1
        elif tok.text in _OPEN.values():
            depth -= 1
        elif tok.text == "," and depth == 0:
            commas.append(tok.start)
    return commas


def _split(text: str, indent: str, limit: int) -> list[str] | None:
    """``text`` (code without indentation) as lines at ``indent``, split at its last bracket
    pair with a non-empty body; ``None`` when it has none."""
    tokens = _tokens(text)
    if tokens is None:
        return None
    pairs = _pairs(tokens)
    for close in sorted(pairs, reverse=True):
        opening = tokens[pairs[close]]
        body = text[opening.end : tokens[close].start].strip()
        if not body:
            continue
        head, tail = text[: opening.end], text[tokens[close].start :]
        inner = indent + _INDENT
        commas = _top_level_commas(body)
        if commas is None:
            return None
        trailing = bool(commas) and body.endswith(",")
        if not trailing and len(inner) + len(body) <= limit:
            return [indent + head, inner + body, indent + tail]
        if not commas:
            return [indent + head, *_layout(body, inner, limit), indent + tail]
        starts = [0, *(c + 1 for c in commas)]
        elements = [body[a:b].strip() for a, b in zip(starts, [*commas, len(body)], strict=True)]
        lines: list[str] = []
        for element in filter(None, elements):
            lines.extend(_layout(element + ",", inner, limit))
        return [indent + head, *lines, indent + tail]
    return None


def _layout(text: str, indent: str, limit: int) -> list[str]:
    """``text`` at ``indent``: one line if it fits, else split."""
    if len(indent) + len(text) <= limit:
        return [indent + text]
    return _split(text, indent, limit) or [indent + text]


def _comment(text: str) -> tuple[str, str]:
    """Split a trailing comment off one line of code."""
    tokens = _tokens(text)
    if tokens and tokens[-1].text.startswith("#"):
        return text[: tokens[-1].start].rstrip(), "  " + tokens[-1].text
    return text, ""


def fit(before: str, after: str, limit: int) -> str:
    """``after`` with each of its new one-line statements longer than ``limit`` split."""
    old = set(before.splitlines())
    out: list[str] = []
    for line in after.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if len(body) <= limit or body in old:
            out.append(line)
            continue
        stripped = body.lstrip()
        indent = body[: len(body) - len(stripped)]
        code, comment = _comment(stripped)
        lines = _split(code, indent, limit) if _tokens(code) is not None else None
        if lines is None:
            out.append(line)
            continue
        newline = line[len(body) :]
        lines[-1] += comment
        out.extend(text + (newline or "\n") for text in lines)
    return "".join(out)
