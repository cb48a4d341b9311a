"""Upstream tool names the proxy never lists nor forwards, and why.

A name is refused when it is over 128 characters, reserved for the guard (``llm_turn``,
``guardkit…``, in any case or disguise), holds a character a reader cannot see (zero-width,
bidirectional, tag and control characters: ``guardkit._visible``), mixes letters of several
scripts (Latin with Cyrillic or Greek: a Latin name with one Cyrillic ``a`` in it), or only
looks like a tool of the policy without being it: equal once case, compatibility forms (NFKC:
fullwidth and mathematical letters), invisible characters and whitespace are folded away, or
once the common Cyrillic, Greek and digit look-alikes of Latin letters are (``search``
spelt in Cyrillic, ``de1ete``). Such a name is never matched to the rule it imitates: the call
is denied and recorded like any unlisted tool's.

The look-alike table is the part of Unicode's confusables (UTS #39) that maps onto Latin
letters from Cyrillic, Greek and digits, not the whole list; mixed scripts catch most of the
rest, since a disguised name rarely avoids Latin altogether.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

from guardkit._visible import escape_hidden, is_hidden
from guardkit.tools.turns import LLM_TURN

__all__ = ["NAME_MAX", "NameRules", "name_problem", "reserved"]

#: The longest tool name the proxy forwards (MCP's own limit).
NAME_MAX = 128
#: Answers remembered per proxy before the memory starts afresh.
_ANSWERS_MAX = 4096

# Look-alikes of Latin letters (case kept): Cyrillic, Greek, Latin letters other than a-z that
# read as one, and the digits and signs that pass for letters.
_LOOKALIKE = str.maketrans(
    {
        # Cyrillic
        **dict(zip("АВЕЅІЈКМНОРСТХУ", "ABESlJKMHOPCTXY", strict=True)),  # noqa: RUF001 - look-alikes on purpose
        **dict(zip("аеіјорсухѕԁһԛԝӏ", "aeijopcyxsdhqwl", strict=True)),  # noqa: RUF001 - look-alikes on purpose
        # Greek
        **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧ", "ABEZHlKMNOPTYX", strict=True)),  # noqa: RUF001 - look-alikes on purpose
        **dict(zip("αοιρνκχυ", "aoipvkxu", strict=True)),
        # Latin letters that read as others, digits and signs that pass for letters
        **dict(zip("ıɡɑ01|I", "igaOlll", strict=True)),  # noqa: RUF001 - look-alikes on purpose
    }
)
# Scripts that one name may mix (Japanese writes Han, Hiragana and Katakana together; Latin
# beside any of them is common): TR39's "highly restrictive" combinations.
_HAN = {"CJK", "HIRAGANA", "KATAKANA", "HANGUL", "BOPOMOFO", "IDEOGRAPHIC"}


def reserved(name: str) -> bool:
    """Names the guard keeps for itself: never an upstream's tool (``llm_turn``, ``guardkit*``),
    in any case, width or disguise."""
    return any(
        folded == LLM_TURN or folded.startswith("guardkit")
        for folded in (_fold(name), _skeleton(name))
    )


def name_problem(name: str, policy: Iterable[str] = ()) -> str | None:
    """Why the proxy refuses an upstream tool ``name`` (shown as ``policy`` names it), or None.

    ``policy`` are the policy's tool names for this upstream (without its server namespace).
    """
    return NameRules(policy).problem(name)


class NameRules:
    """``name_problem`` for one policy: its names folded once, each answer remembered (the
    check is on the path of every call)."""

    def __init__(self, policy: Iterable[str]) -> None:
        self._policy = frozenset(policy)
        self._folds: dict[str, str] = {}
        self._skeletons: dict[str, str] = {}
        for known in sorted(self._policy):
            self._folds.setdefault(_fold(known), known)
            self._skeletons.setdefault(_skeleton(known), known)
        self._answers: dict[str, str | None] = {}

    def problem(self, name: str) -> str | None:
        """Why ``name`` is refused, or None."""
        try:
            return self._answers[name]
        except KeyError:
            pass
        found = self._problem(name)
        if len(self._answers) >= _ANSWERS_MAX:
            self._answers.clear()  # a client sending ever new names must not grow this
        self._answers[name] = found
        return found

    def _problem(self, name: str) -> str | None:
        if len(name) > NAME_MAX:
            return f"a tool name is at most {NAME_MAX} characters"
        if reserved(name):
            return (
                "the name is reserved for the guard (llm_turn, guardkit...), never a server's tool"
            )
        if name in self._policy:
            return None
        if not (name.isascii() and name.isprintable()):
            hidden = "".join(sorted({ch for ch in name if is_hidden(ch)}))
            if hidden:
                return f"the name holds characters a reader cannot see ({escape_hidden(hidden)})"
        scripts = _scripts(name)
        if len(scripts) > 1:
            return f"the name mixes letters of several scripts ({', '.join(sorted(scripts))})"
        known = self._folds.get(_fold(name)) or self._skeletons.get(_skeleton(name))
        if known is not None:
            return (
                f"the name only looks like the policy's tool {known!r} (it differs by case, "
                "width, spacing or look-alike characters), so it is never matched to that rule"
            )
        return None


def _fold(name: str) -> str:
    text = unicodedata.normalize("NFKC", name).casefold()
    return "".join(ch for ch in text if not (is_hidden(ch) or ch.isspace()))


def _skeleton(name: str) -> str:
    text = unicodedata.normalize("NFKC", name)
    text = "".join(ch for ch in text if not (is_hidden(ch) or ch.isspace()))
    return text.translate(_LOOKALIKE).casefold()


def _scripts(name: str) -> set[str]:
    if name.isascii():
        return set()
    found: set[str] = set()
    for ch in unicodedata.normalize("NFKC", name):
        if ch.isascii() or not unicodedata.category(ch).startswith("L"):
            continue
        script = unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0]
        found.add("HAN" if script in _HAN else script)
    if any(ch.isascii() and ch.isalpha() for ch in name):
        found.add("LATIN")
    if found <= {"LATIN", "HAN"}:
        return set()
    return found
