"""Provenance-tagged arguments: where each argument value of a tool call came from.

A ``Provenance`` holds a run's sources: the user's task and the system prompt (trusted), every
guarded tool's result (untrusted unless the tool's ``output`` is ``"trusted"``) and values code
tagged with ``tag()``. Before a request each string or number argument is labelled by the sources
it occurs in (``trusted:task``, ``untrusted:<tool>:<action_id>``...) or ``model-generated``.

Matching compares Unicode-normalised (NFKC), case-folded text with all whitespace and invisible
format characters removed, so ``Bob @ Example.com`` matches ``bob@example.com``. A rule
``require="trusted"`` passes only a value that occurs whole in a trusted source; a value stitched
together from pieces (of untrusted results, or of the model's own making) fails it, and its label
names the untrusted sources that share a fragment with it. What it can't catch: a value the model
transforms beyond case and whitespace (translated, re-encoded, spelled out) and a trusted source
that happens to contain the attacker's value.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from typing import Any

from guardkit.errors import PolicyError

__all__ = ["Provenance", "ProvenanceRule", "current_provenance", "normalise_text", "tag"]

_FRAGMENT = 4


def normalise_text(text: str) -> str:
    """NFKC, case-folded, with whitespace and format characters (zero-width...) removed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in folded if not ch.isspace() and unicodedata.category(ch) != "Cf")


def _fragments(text: str) -> set[str]:
    word = []
    out: set[str] = set()
    for ch in text + " ":
        if ch.isalnum():
            word.append(ch)
        else:
            if len(word) >= _FRAGMENT:
                out.add("".join(word))
            word = []
    return out


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


@dataclass(frozen=True, slots=True)
class _Source:
    label: str
    trusted: bool
    text: str
    fragments: frozenset[str]


@dataclass(slots=True)
class Provenance:
    """The sources of one agent run; activate it with ``with provenance:`` around the run.

    >>> with Provenance(task="Email the report to bob@example.com") as prov:
    ...     run_agent(...)
    """

    task: str = ""
    system: str = ""
    sources: list[_Source] = field(default_factory=list)
    _tokens: list[Token[Provenance | None]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if self.task:
            self.add("trusted:task", self.task, trusted=True)
        if self.system:
            self.add("trusted:system", self.system, trusted=True)

    def add(self, label: str, value: Any, *, trusted: bool) -> None:
        """Add a source; non-string values are added as their JSON text."""
        text = (
            value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
        )
        norm = normalise_text(text)
        self.sources.append(
            _Source(
                label,
                trusted,
                norm,
                frozenset(_fragments(unicodedata.normalize("NFKC", text).casefold())),
            )
        )

    def add_result(self, tool: str, action_id: str | None, value: Any, *, trusted: bool) -> None:
        """What a guarded tool returned; the decorator calls this after each successful run."""
        kind = "trusted" if trusted else "untrusted"
        self.add(f"{kind}:{tool}:{action_id}", value, trusted=trusted)

    def labels(self, value: Any) -> list[str]:
        """Where ``value`` occurs: source labels, else ``model-generated`` (+ shared fragments)."""
        text = normalise_text(str(value))
        found = [src.label for src in self.sources if text and text in src.text]
        if found:
            return found
        pieces = _fragments(unicodedata.normalize("NFKC", str(value)).casefold())
        shared = [
            f"fragment:{src.label}"
            for src in self.sources
            if not src.trusted and pieces & src.fragments
        ]
        return ["model-generated", *shared]

    def trusted(self, value: Any) -> bool:
        text = normalise_text(str(value))
        return bool(text) and any(src.trusted and text in src.text for src in self.sources)

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
