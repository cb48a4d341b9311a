"""Canonical JSON and SHA-256 helpers shared by the ledger, approvals and idempotency."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

__all__ = ["canonical_json", "sha256_hex", "input_digest", "check_json_value"]

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


def _plain(value: Any) -> bool:
    """The common case, checked fast: exact JSON types, string keys, finite floats."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is dict:
        return all(type(key) is str and _plain(item) for key, item in value.items())
    if kind is list or kind is tuple:
        return all(_plain(item) for item in value)
    return False


def check_json_value(value: Any, path: str = "input") -> str | None:
    """Return a problem description if ``value`` is not plain JSON data, else None."""
    if _plain(value):
        return None
    return _problem(value, path)


def _problem(value: Any, path: str) -> str | None:
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} holds a non-finite number"
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            problem = _problem(item, f"{path}[{index}]")
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has a non-string key {key!r}"
            problem = _problem(item, f"{path}.{key}")
            if problem:
                return problem
        return None
    return f"{path} holds a {type(value).__name__}, which is not JSON"
