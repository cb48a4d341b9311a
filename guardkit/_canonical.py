"""Canonical JSON and SHA-256 helpers shared by the ledger, approvals and idempotency."""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "canonical_json",
    "check_json_value",
    "input_digest",
    "json_problem",
    "plain_json",
    "sha256_hex",
    "text_problem",
    "visible",
]

_encoder = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)
# The C encoder ``JSONEncoder.encode`` builds afresh on every call, built once: a third of the
# cost of encoding a small input. Same settings, so the same bytes (``tests/core`` checks it).
_c_encoder = getattr(json.encoder, "c_make_encoder", None)
_fast = (
    None
    if _c_encoder is None
    else _c_encoder(
        None, _encoder.default, json.encoder.encode_basestring, None, ":", ",", True, False, False
    )
)


def canonical_json(value: Any) -> str:
    """Keys sorted at every depth, no whitespace, raw UTF-8: Lineage's canonical form.

    Raises ``ValueError`` for NaN or infinite floats and ``TypeError`` for values JSON can't hold.
    """
    if _fast is None:  # pragma: no cover - CPython always has the C encoder
        return _encoder.encode(value)
    return "".join(_fast(value, 0))


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def input_digest(value: Any) -> str:
    """SHA-256 of the canonical JSON of an action's input: what an approval binds to."""
    return sha256_hex(canonical_json(value))


#: The integers Lineage's server holds (serde_json: ``i64`` or ``u64``); beyond them it would
#: round to a float, and the ledger's canonical text would no longer be Lineage's.
INT_MIN, INT_MAX = -(2**63), 2**64 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")


def visible(text: str) -> str:
    """``text`` with lone surrogates written as ``\\udXXX`` escapes, so it can be encoded."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")


def text_problem(value: str) -> str | None:
    """Why a string is not Unicode text (a lone surrogate: UTF-8 can't encode it), or None."""
    if value.isascii():
        return None
    found = _SURROGATE.search(value)
    return None if found is None else f"holds a lone surrogate ({visible(found.group())})"


def json_problem(value: Any, path: str = "input") -> tuple[str, str] | None:
    """``(field path, problem)`` for the first part of ``value`` that is not plain JSON data.

    Plain means: dicts with string keys, lists, strings of Unicode text, booleans, None, finite
    floats and integers Lineage can hold (``INT_MIN``-``INT_MAX``). Paths read ``input.a[2].b``.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        problem = text_problem(value)
        return None if problem is None else (path, problem)
    if isinstance(value, int):
        if INT_MIN <= value <= INT_MAX:
            return None
        return path, f"holds an integer of {len(str(abs(value)))} digits, beyond -2**63..2**64-1"
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, "holds a non-finite number")
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = json_problem(item, f"{path}[{index}]")
            if found:
                return found
        return None
    if isinstance(value, dict):
        return _object_problem(value, path)
    return path, f"holds a {type(value).__name__}, which is not JSON"


def _object_problem(value: dict[Any, Any], path: str) -> tuple[str, str] | None:
    for key, item in value.items():
        if not isinstance(key, str):
            return path, f"has a non-string key {key!r}"
        where = visible(f"{path}.{key}" if path else key)
        problem = text_problem(key)
        found = (where, f"has a key that {problem}") if problem else json_problem(item, where)
        if found:
            return found
    return None


def _plain(value: Any) -> bool:
    """The common case, checked fast: exact JSON types, string keys, text without lone
    surrogates, finite floats, integers Lineage can hold."""
    kind = type(value)
    if kind is dict:  # first: every request's input is one
        # Spelt out (a loop, strings checked in place): this runs on every request's input.
        for key, item in value.items():
            if type(key) is not str or not (key.isascii() or _SURROGATE.search(key) is None):
                return False
            if type(item) is str:
                if not item.isascii() and _SURROGATE.search(item) is not None:
                    return False
            elif not _plain(item):
                return False
        return True
    if kind is str:
        return value.isascii() or _SURROGATE.search(value) is None
    if kind is bool or value is None:
        return True
    if kind is int:
        return bool(INT_MIN <= value <= INT_MAX)
    if kind is float:
        return math.isfinite(value)
    if kind is list or kind is tuple:
        return all(_plain(item) for item in value)
    return False


#: Whether a value is plain JSON, by the fast test alone (False: ask ``check_json_value``).
plain_json = _plain


def check_json_value(value: Any, path: str = "input") -> str | None:
    """Return a problem description (``"input.a holds ..."``) if ``value`` is not plain JSON."""
    if _plain(value):
        return None
    found = json_problem(value, path)
    return None if found is None else f"{found[0]} {found[1]}"
