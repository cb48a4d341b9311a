"""Characters a reader can't see, and text with them written as visible escapes.

Bidirectional overrides (``U+202E`` turns ``invoice<U+202E>fdp.exe`` into what reads as
``invoiceexe.pdf``), zero-width characters, tag characters, fillers and variation selectors hide
or disguise what an action really does. Provenance never trusts a value holding one
(``guardkit.checks.matching``); the console and the CLI show each as ``\\u202e``.
"""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = ["escape_hidden", "hidden_in", "is_hidden"]

# Default-ignorable code points that are not format (Cf) or control (Cc) characters: the
# combining grapheme joiner, Hangul and Khmer fillers, Mongolian and other variation selectors.
_IGNORABLE = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xE0100, 0xE01EF),
)
_SEPARATORS = ("Zl", "Zp")


def is_hidden(ch: str) -> bool:
    """Whether ``ch`` is invisible or moves text around: format, control (but tab and newlines),
    line and paragraph separators, fillers and variation selectors."""
    category = unicodedata.category(ch)
    if category == "Cf" or category in _SEPARATORS or (category == "Cc" and ch not in "\t\n\r"):
        return True
    if category not in ("Mn", "Lo"):  # every _IGNORABLE code point is one of these
        return False
    code = ord(ch)
    return any(low <= code <= high for low, high in _IGNORABLE)


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    # Above the BMP as a UTF-16 surrogate pair: the escape JSON and JavaScript both read.
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


@functools.cache
def _pattern() -> re.Pattern[str]:
    """One group matching each hidden character of the BMP, and every character above it
    (judged one by one by ``is_hidden``: emoji and rare scripts mostly, and the tags); a
    class of BMP ranges alone keeps the regular expression engine on its fast bitmap."""
    ranges: list[list[int]] = []
    for code in range(0x10000):
        if not is_hidden(chr(code)):
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    listed = "".join(f"\\u{a:04x}-\\u{b:04x}" for a, b in ranges)
    return re.compile(f"([{listed}\\U00010000-\\U0010ffff])")


#: Up to this many distinct hidden characters are found or escaped one at a time, each with a
#: C-speed pass over the text; past that (hostile text), the rest goes character by character.
_FEW = 16


@functools.lru_cache(maxsize=4096)
def _shown(ch: str) -> str:
    return _escape(ch) if is_hidden(ch) else ch


def _plain(text: str) -> bool:
    return text.isascii() and text.isprintable()


def escape_hidden(text: str) -> str:
    """``text`` with each hidden character written as its ``\\uXXXX`` escape.

    The escapes are JSON's, so escaping a JSON document leaves it valid and equal when parsed.

    >>> escape_hidden("invoice\\u202efdp.exe")
    'invoice\\\\u202efdp.exe'
    """
    if _plain(text):
        return text
    pattern, distinct = _pattern(), 0
    found = pattern.search(text)
    while found is not None and distinct < _FEW:
        ch = found.group()
        if is_hidden(ch):
            distinct += 1
            text = text.replace(ch, _escape(ch))  # an escape is ASCII: it hides nothing new
            found = pattern.search(text, found.start())
        else:  # a visible character above the BMP (an emoji)
            found = pattern.search(text, found.end())
    if found is None:
        return text
    pieces = pattern.split(text)  # the text between matches, and each match
    pieces[1::2] = map(_shown, pieces[1::2])
    return "".join(pieces)


def hidden_in(text: str) -> set[str]:
    """The hidden characters ``text`` holds (none for plain text)."""
    if _plain(text):
        return set()
    pattern, hidden = _pattern(), set[str]()
    found = pattern.search(text)
    while found is not None and len(hidden) < _FEW:
        ch = found.group()
        if is_hidden(ch):
            hidden.add(ch)
            text = text.replace(ch, "")
            found = pattern.search(text, found.start())
        else:
            found = pattern.search(text, found.end())
    if found is not None:
        hidden |= {ch for ch in set(pattern.findall(text, found.start())) if is_hidden(ch)}
    return hidden
