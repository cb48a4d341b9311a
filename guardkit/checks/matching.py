"""How provenance compares an argument value with a source: whole tokens, never substrings.

A source is indexed once, when it is added: NFKC, case-folded, invisible characters dropped,
split into lines and whitespace tokens with edge punctuation trimmed (``bob@example.com.`` and
``(2024-0150)`` are the tokens ``bob@example.com`` and ``2024-0150``). A structured source (a
tool's JSON result) is indexed leaf by leaf. A value matches a source when

* its tokens are a contiguous run of one line's (or one leaf's) tokens: ``Bob Smith`` matches
  "email Bob Smith today", ``150`` does not match ``2024-0150`` and ``42100`` does not match
  ``42 100``;
* or it is a number equal to a number token: ``10`` = ``10.00`` = ``10,00`` when the decimal
  point is a comma (the locale's, by default); ``0150`` is an identifier, not the number 150.

A **grouped identifier** (three or more alphanumeric tokens with a digit, in groups of one length
of at least four, the last group no longer: an IBAN or card number as printed) is one unit: it
matches whole, spaced or written without spaces, and no part of it matches on its own, so a
truncated or middle part of a printed IBAN is untrusted.

A value with invisible characters (zero-width, bidirectional controls, tag characters, fillers)
or compatibility forms (full-width letters, ligatures) never matches: the text the tool would
receive is not the text that was matched.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from guardkit._visible import is_hidden

__all__ = ["Index", "Probe", "altered", "fragments", "normalise", "probe"]

#: Punctuation trimmed off a token's edges: opening and initial quotes and brackets in front,
#: closing ones behind, and other punctuation (``. , ; : ! ? " '``...) on both sides. Dashes and
#: ``+`` stay (a sign), and so do currency symbols (numbers drop them when parsed); ``<...>``
#: and backquotes go, as around e-mail addresses and code.
_LEADING = frozenset({"Ps", "Pi", "Po"})
_TRAILING = frozenset({"Pe", "Pf", "Po"})
_FRAGMENT = 4
_GROUP_MIN = 4


def _has_invisible(text: str) -> bool:
    if text.isascii():  # only control characters can hide in ASCII
        return not text.isprintable() and any(map(is_hidden, text))
    return any(map(is_hidden, text))


def altered(text: str) -> str | None:
    """Why ``text`` is not the text it would be matched as, or None.

    >>> altered("DE89\\u200b3704")
    'invisible characters'
    """
    if _has_invisible(text):
        return "invisible characters"
    if text.isascii():
        return None
    spaced = "".join(" " if ch.isspace() else ch for ch in text)
    if unicodedata.normalize("NFKC", spaced) != unicodedata.normalize("NFC", spaced):
        return "compatibility characters"
    return None


def normalise(text: str) -> str:
    """NFKC, case-folded, invisible characters dropped (tokens are split on whitespace)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    if folded.isascii() and folded.isprintable():
        return folded
    return "".join(ch for ch in folded if ch in "\n\t" or not is_hidden(ch))


def _trim(token: str) -> str:
    start, end = 0, len(token)
    category = unicodedata.category
    while start < end and (token[start] in "`<" or category(token[start]) in _LEADING):
        start += 1
    while end > start and (token[end - 1] in "`>" or category(token[end - 1]) in _TRAILING):
        end -= 1
    return token[start:end]


def _tokens(line: str) -> tuple[str, ...]:
    return tuple(t for t in map(_trim, line.split()) if t)


def _number_pattern(point: str) -> re.Pattern[str]:
    group = "," if point == "." else "."
    p, g = re.escape(point), re.escape(group)
    return re.compile(rf"[+-]?(?:\d{{1,3}}(?:{g}\d{{3}})+|\d+)(?:{p}\d+)?")


_PATTERNS = {point: _number_pattern(point) for point in ".,"}


def _number(token: str, point: str) -> Decimal | None:
    """The number a token writes, or None (identifiers with a leading zero are not numbers)."""
    text = "".join(ch for ch in token if unicodedata.category(ch) != "Sc")
    if not text or not _PATTERNS[point].fullmatch(text):
        return None
    digits = text.lstrip("+-")
    if len(digits) > 1 and digits[0] == "0" and digits[1].isdigit():
        return None
    group = "," if point == "." else "."
    try:
        return Decimal(text.replace(group, "").replace(point, "."))
    except InvalidOperation:  # pragma: no cover - the pattern admits only valid numbers
        return None


def _groupable(token: str) -> bool:
    return token.isascii() and token.isalnum()


def _has_digit(token: str) -> bool:
    return any(ch.isdigit() for ch in token)


def _groups(tokens: tuple[str, ...]) -> Iterator[tuple[int, int]]:
    """Spans ``[start, end)`` of grouped identifiers among ``tokens``.

    Three or more alphanumeric groups of one length (at least four), the last possibly
    shorter, the first with a digit and at most one without: ``DE89 3704 0044 0532 0130 00``,
    ``GB29 NWBK 6016 1331 9268 19``, ``4111 1111 1111 1111``.
    """
    i = 0
    while i < len(tokens):
        size, j, letters = len(tokens[i]), i, 0
        while j < len(tokens) and _groupable(tokens[j]) and len(tokens[j]) <= size:
            letters += not _has_digit(tokens[j])
            if letters > 1 or (j > i and len(tokens[j - 1]) < size):
                break
            j += 1
        if size >= _GROUP_MIN and j - i >= 3 and _has_digit(tokens[i]):
            yield i, j
            i = j
        else:
            i += 1


def fragments(text: str) -> frozenset[str]:
    """Alphanumeric words of four or more characters (what labels an untrusted near miss)."""
    return frozenset(w for w in re.split(r"\W+", text) if len(w) >= _FRAGMENT)


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


@dataclass(frozen=True, slots=True)
class Index:
    """One source, ready to be matched against."""

    #: Token -> where it starts a possible match: (line, position).
    first: dict[str, list[tuple[int, int]]]
    lines: tuple[tuple[str, ...], ...]
    #: Per line, the grouped identifiers as spans.
    spans: tuple[tuple[tuple[int, int], ...], ...]
    #: Grouped identifiers written without spaces.
    compact: frozenset[str]
    numbers: frozenset[Decimal]
    words: frozenset[str]

    @classmethod
    def of(cls, value: Any, point: str) -> Index:
        """Index a string, or every key and leaf of a structure (numbers kept as numbers)."""
        first: dict[str, list[tuple[int, int]]] = {}
        lines: list[tuple[str, ...]] = []
        spans: list[tuple[tuple[int, int], ...]] = []
        compact: set[str] = set()
        numbers: set[Decimal] = set()
        words: set[str] = set()
        for leaf in _leaves(value):
            if isinstance(leaf, bool) or leaf is None:
                continue
            if isinstance(leaf, (int, float)):
                numbers.add(Decimal(repr(leaf)) if isinstance(leaf, float) else Decimal(leaf))
            text = normalise(str(leaf))
            words |= fragments(text)
            for raw in text.splitlines():
                tokens = _tokens(raw)
                line = len(lines)
                found = tuple(_groups(tokens))
                inside = {k for start, end in found for k in range(start, end)}
                for start, end in found:
                    compact.add("".join(tokens[start:end]))
                for k, token in enumerate(tokens):
                    first.setdefault(token, []).append((line, k))
                    number = None if k in inside else _number(token, point)
                    if number is not None:
                        numbers.add(number)
                lines.append(tokens)
                spans.append(found)
        return cls(
            first,
            tuple(lines),
            tuple(spans),
            frozenset(compact),
            frozenset(numbers),
            frozenset(words),
        )

    def _cuts(self, line: int, start: int, end: int) -> bool:
        """Whether ``[start, end)`` cuts a grouped identifier of ``line``."""
        return any(s < start < e or s < end < e for s, e in self.spans[line])

    def _contains(self, tokens: tuple[str, ...]) -> bool:
        size = len(tokens)
        for line, start in self.first.get(tokens[0], ()):
            if self.lines[line][start : start + size] == tokens and not self._cuts(
                line, start, start + size
            ):
                return True
        return False

    def matches(self, found: Probe) -> bool:
        """Whether the probed value is a whole token run, identifier or number of this source."""
        if found.number is not None and found.number in self.numbers:
            return True
        if found.compact is not None and (
            found.compact in self.compact or self._contains((found.compact,))
        ):
            return True
        return bool(found.tokens) and self._contains(found.tokens)


@dataclass(frozen=True, slots=True)
class Probe:
    """An argument value, ready to be looked up."""

    tokens: tuple[str, ...]
    #: The value without spaces when it is one token or one grouped identifier.
    compact: str | None
    number: Decimal | None
    #: Why it can never be trusted (``altered``), or None.
    problem: str | None
    words: frozenset[str]


@functools.lru_cache(maxsize=512, typed=True)
def probe(value: Any, point: str) -> Probe:
    """Prepare a string or number argument for matching (cached: labels and rules ask twice)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        exact = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        return Probe(_tokens(str(value)), str(value), exact, None, frozenset())
    text = str(value)
    norm = normalise(text)
    tokens = _tokens(norm)
    spans = tuple(_groups(tokens))
    if len(tokens) == 1:
        compact: str | None = tokens[0]
    elif spans == ((0, len(tokens)),):
        compact = "".join(tokens)
    else:
        compact = None
    number = _number(tokens[0], point) if len(tokens) == 1 else None
    return Probe(tokens, compact, number, altered(text), fragments(norm))
