"""``Env``: what one module's analysis needs from the rest of the project (see ``project``).

Its digest keys the module's cached findings, so a change in one file re-analyses exactly the
modules whose ``Env`` it changes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

__all__ = ["EMPTY_ENV", "Env"]


@dataclass(frozen=True, slots=True)
class Env:
    """What a module's analysis needs from the rest of the project."""

    #: refs called in the module that reach an ungated model call
    model: frozenset[str] = field(default_factory=frozenset)
    #: refs called in the module that raise when a limit is passed
    limit: frozenset[str] = field(default_factory=frozenset)
    #: the module's own functions and classes (qualified) exposed to a model as tools
    tools: frozenset[str] = field(default_factory=frozenset)
    #: the module's own functions handed to a model only through a guardkit integration
    gated: frozenset[str] = field(default_factory=frozenset)
    #: refs called in the module that run a retried provider helper: each call is a model turn
    turns: frozenset[str] = field(default_factory=frozenset)
    #: the module's own retried provider helpers that are called somewhere (gated there)
    called: frozenset[str] = field(default_factory=frozenset)
    #: refs called in the module that only build a value from what they are given
    builders: frozenset[str] = field(default_factory=frozenset)
    #: ``(owner, name, kind)``: kinds of the parameters of the module's functions (from the
    #: arguments their callers pass) and of the attributes of classes it uses
    kinds: frozenset[tuple[str, str, str]] = field(default_factory=frozenset)
    #: ``(ref, "steps" | "checks", attribute)``: refs called in the module that run a method
    #: stepping a counter attribute, or returning a comparison of one (see ``counted``)
    counting: frozenset[tuple[str, str, str]] = field(default_factory=frozenset)

    def counting_map(self) -> dict[str, list[tuple[str, str]]]:
        """``counting`` as ``ref -> [(kind, attribute)]``."""
        found: dict[str, list[tuple[str, str]]] = {}
        for ref, kind, attribute in sorted(self.counting):
            found.setdefault(ref, []).append((kind, attribute))
        return found

    def kind_map(self) -> dict[str, dict[str, str]]:
        """``kinds`` as ``owner -> {name: kind}`` (what ``Values`` reads)."""
        found: dict[str, dict[str, str]] = {}
        for owner, name, kind in sorted(self.kinds):
            found.setdefault(owner, {})[name] = kind
        return found

    def digest(self) -> str:
        data = [sorted(getattr(self, f)) for f in self.__slots__]
        return hashlib.blake2b(json.dumps(data).encode(), digest_size=8).hexdigest()


EMPTY_ENV = Env()
