"""Reading check rules: from the decorator's ``{argument: rule}`` and from a policy section."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from guardkit.errors import PolicyError

__all__ = ["as_strings", "rules_by_argument"]

T = TypeVar("T")


def rules_by_argument(
    rules: Mapping[str, T | Sequence[T]] | None, kind: type[T], section: str
) -> dict[str, tuple[T, ...]]:
    """Normalise ``{"arg": rule}`` or ``{"arg": [rule, ...]}`` into tuples; TypeError otherwise."""
    out: dict[str, tuple[T, ...]] = {}
    for argument, value in (rules or {}).items():
        items = tuple(value) if isinstance(value, (list, tuple)) else (value,)
        for item in items:
            if not isinstance(item, kind):
                raise TypeError(f"{section}[{argument!r}] must be a {kind.__name__}, got {item!r}")
        out[str(argument)] = items
    return out


def as_strings(value: Any, where: str) -> tuple[str, ...]:
    """A policy list of strings; ``PolicyError`` naming ``where`` otherwise."""
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise PolicyError([(where, "must be a list of strings")])
    items = tuple(value)
    if not all(isinstance(item, str) for item in items):
        raise PolicyError([(where, "must be a list of strings")])
    return items
