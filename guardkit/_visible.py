"""Characters a reader can't see, and text with them written as visible escapes.

Bidirectional overrides (``U+202E`` turns ``invoice<U+202E>fdp.exe`` into what reads as
``invoiceexe.pdf``), zero-width characters, tag characters, fillers and variation selectors hide
or disguise what an action really does. Provenance never trusts a value holding one
(``guardkit.checks.matching``); the console and the CLI show each as ``\\u202e``.
"""

from __future__ import annotations

import unicodedata

__all__ = ["escape_hidden", "is_hidden"]

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


def escape_hidden(text: str) -> str:
    """``text`` with each hidden character written as its ``\\uXXXX`` escape.

    The escapes are JSON's, so escaping a JSON document leaves it valid and equal when parsed.

    >>> escape_hidden("invoice\\u202efdp.exe")
    'invoice\\\\u202efdp.exe'
    """
    if text.isascii() and text.isprintable():
        return text
    return "".join(_escape(ch) if is_hidden(ch) else ch for ch in text)
