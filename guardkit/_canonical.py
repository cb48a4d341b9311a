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


def canonical_json(value: Any) -> str:
    """Keys sorted at every depth, no whitespace, raw UTF-8: Lineage's canonical form.

    Raises ``ValueError`` for NaN or infinite floats and ``TypeError`` for values JSON can't hold.
    """
    return _encoder.encode(value)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def input_digest(value: Any) -> str:
    """SHA-256 of the canonical JSON of an action's input: what an approval binds to."""
    return sha256_hex(canonical_json(value))


def check_json_value(value: Any, path: str = "input") -> str | None:
    """Return a problem description if ``value`` is not plain JSON data, else None."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{path} holds a non-finite number"
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            problem = check_json_value(item, f"{path}[{index}]")
            if problem:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has a non-string key {key!r}"
            problem = check_json_value(item, f"{path}.{key}")
            if problem:
                return problem
        return None
    return f"{path} holds a {type(value).__name__}, which is not JSON"
