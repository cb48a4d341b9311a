"""Provenance-tagged arguments: where each argument value of a tool call came from.

A ``Provenance`` holds a run's sources: the user's task and the system prompt (trusted), every
guarded tool's result (untrusted unless the tool's ``output`` is ``"trusted"``) and values code
tagged with ``tag()``. Before a request each string or number argument is labelled by the sources
it occurs in (``trusted:task``, ``untrusted:<tool>:<action_id>``...) or ``model-generated``.

A value occurs in a source only as a whole: a run of whole tokens, a grouped identifier (an IBAN
as printed) or a number equal to a number token, compared NFKC and case-folded
(``guardkit.checks.matching``). ``150`` does not occur in invoice ``2024-0150``, ``42100`` not
in ``42 100``, a middle part of an IBAN not in the IBAN; ``10`` occurs in ``10.00``. A value
with invisible or compatibility characters never counts as trusted (the text the tool gets is not
the text matched). A rule ``require="trusted"`` passes only a value that occurs in a trusted
source; a value stitched from pieces fails it, and its label names the untrusted sources that
share a word with it. What it can't catch: a value the model transforms beyond case (translated,
re-encoded, spelled out) and a trusted source that happens to contain the attacker's value.
"""

from __future__ import annotations

import locale
from collections.abc import Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from guardkit.checks.matching import Index, probe
from guardkit.errors import PolicyError

__all__ = ["Provenance", "ProvenanceRule", "current_provenance", "tag"]


def _locale_point() -> str:
    point = locale.localeconv()["decimal_point"]
    return point if point in ".," else "."


@dataclass(frozen=True, slots=True, kw_only=True)
class ProvenanceRule:
    """What an argument's value must be traceable to.

    >>> @guardkit.tool(provenance={"to": ProvenanceRule(require="trusted")})
    """

    require: str = "trusted"
    #: ``"approval"`` asks a human (when the guard can); ``"deny"`` denies.
    on_untrusted: str = "approval"

    def __post_init__(self) -> None:
        if self.require != "trusted" or self.on_untrusted not in ("approval", "deny"):
            raise ValueError("ProvenanceRule(require='trusted', on_untrusted='approval'|'deny')")

    @classmethod
    def normalise(cls, rules: Mapping[str, Any] | None) -> dict[str, Any]:
        """Accept ``{"to": "trusted"}`` shorthand in the decorator as in the policy."""
        return {arg: cls() if rule == "trusted" else rule for arg, rule in (rules or {}).items()}

    @classmethod
    def from_policy(cls, data: Any, where: str) -> ProvenanceRule:
        """``provenance.<arg> = "trusted"`` or ``{require = "trusted", on_untrusted = "deny"}``."""
        if data == "trusted":
            return cls()
        if not isinstance(data, Mapping) or set(data) - {"require", "on_untrusted"}:
            raise PolicyError([(where, "must be 'trusted' or {require, on_untrusted}")])
        try:
            return cls(
                require=data.get("require", "trusted"),
                on_untrusted=data.get("on_untrusted", "approval"),
            )
        except ValueError as exc:
            raise PolicyError([(where, str(exc))]) from exc


def _hashable(value: Any) -> Any:
    # A string or number is matched as itself; anything else (a dict in a list) as its text.
    return value if isinstance(value, (str, int, float)) else str(value)


@dataclass(frozen=True, slots=True)
class _Source:
    label: str
    trusted: bool
    index: Index


@dataclass(slots=True)
class Provenance:
    """The sources of one agent run; activate it with ``with provenance:`` around the run.

    >>> with Provenance(task="Email the report to bob@example.com") as prov:
    ...     run_agent(...)

    ``decimal_point`` says how numbers in sources are written (``","``: ``10,00`` is ten); by
    default the locale's (``LC_NUMERIC``).
    """

    task: str = ""
    system: str = ""
    sources: list[_Source] = field(default_factory=list)
    decimal_point: str = field(default_factory=_locale_point)
    _tokens: list[Token[Provenance | None]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if self.decimal_point not in (".", ","):
            raise ValueError("decimal_point is '.' or ','")
        if self.task:
            self.add("trusted:task", self.task, trusted=True)
        if self.system:
            self.add("trusted:system", self.system, trusted=True)

    def add(self, label: str, value: Any, *, trusted: bool) -> None:
        """Add a source: text, or a structure whose keys and leaves are matched one by one."""
        self.sources.append(_Source(label, trusted, Index.of(value, self.decimal_point)))

    def add_result(self, tool: str, action_id: str | None, value: Any, *, trusted: bool) -> None:
        """What a guarded tool returned; the decorator calls this after each successful run."""
        kind = "trusted" if trusted else "untrusted"
        self.add(f"{kind}:{tool}:{action_id}", value, trusted=trusted)

    def labels(self, value: Any) -> list[str]:
        """Where ``value`` occurs: source labels, else ``model-generated`` (+ shared words).

        A value with invisible or compatibility characters is labelled ``altered:<why>`` first.
        """
        found = probe(_hashable(value), self.decimal_point)
        altered = [f"altered:{found.problem}"] if found.problem else []
        matched = [src.label for src in self.sources if src.index.matches(found)]
        if matched:
            return [*altered, *matched]
        shared = [
            f"fragment:{src.label}"
            for src in self.sources
            if not src.trusted and found.words & src.index.words
        ]
        return [*altered, "model-generated", *shared]

    def trusted(self, value: Any) -> bool:
        """Whether ``value`` occurs, unaltered, in a trusted source."""
        found = probe(_hashable(value), self.decimal_point)
        return found.problem is None and any(
            src.trusted and src.index.matches(found) for src in self.sources
        )

    def __enter__(self) -> Provenance:
        self._tokens.append(_current.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        _current.reset(self._tokens.pop())


_current: ContextVar[Provenance | None] = ContextVar("guardkit_provenance", default=None)


def current_provenance() -> Provenance | None:
    """The provenance of the run in progress (innermost ``with provenance:``), if any."""
    return _current.get()


def tag(value: Any, *, source: str, trusted: bool) -> Any:
    """Mark a value code built itself as coming from ``source``; returns ``value`` unchanged.

    >>> recipient = guardkit.tag(crm.lookup(customer), source="crm", trusted=True)
    """
    provenance = _current.get()
    if provenance is None:
        raise LookupError("guardkit.tag needs an active Provenance (with provenance: ...)")
    provenance.add(f"{'trusted' if trusted else 'untrusted'}:{source}", value, trusted=trusted)
    return value
