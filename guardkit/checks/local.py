"""A tool's local checks, from its decorator and from its policy section, run before each request.

Precedence: both apply. A rule in the decorator and a rule in the agent's policy for the same
argument must both pass, so neither can widen the other; the policy's rules are read once per
agent (a policy never changes) and only from a ``LocalAgent``, since an HTTP client has no policy.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from guardkit.checks._base import Denial, as_strings, rules_by_argument
from guardkit.checks.egress import EgressRule, check_url
from guardkit.checks.paths import PathRule, check_path
from guardkit.checks.runtime import Fence, Runtime
from guardkit.decisions import DenyCode
from guardkit.errors import PolicyError
from guardkit.provenance import ProvenanceRule, current_provenance
from guardkit.store.base import Store

__all__ = ["CheckSet", "PolicyChecks"]


def _merge(
    left: Mapping[str, tuple[Any, ...]], right: Mapping[str, tuple[Any, ...]]
) -> dict[str, tuple[Any, ...]]:
    out = dict(left)
    for key, rules in right.items():
        out[key] = out.get(key, ()) + rules
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckSet:
    """Every local rule of one tool, by argument name."""

    paths: Mapping[str, tuple[PathRule, ...]] = field(default_factory=dict)
    egress: Mapping[str, tuple[EgressRule, ...]] = field(default_factory=dict)
    provenance: Mapping[str, tuple[ProvenanceRule, ...]] = field(default_factory=dict)
    runtime: Runtime | None = None
    #: Whether the tool's results are trusted sources for provenance (default untrusted).
    output_trusted: bool | None = None
    #: The policy sends this tool to a human anyway (so provenance can ask one).
    requires_approval: bool = False

    @classmethod
    def from_arguments(
        cls, *, paths: Any, egress: Any, provenance: Any, runtime: Any, output: str | None
    ) -> CheckSet:
        """The decorator's arguments; TypeError/ValueError for misuse, at decoration time."""
        if runtime is True:
            runtime = Runtime()
        if runtime is not None and runtime is not False and not isinstance(runtime, Runtime):
            raise TypeError(f"runtime must be a Runtime or True, got {runtime!r}")
        if output not in (None, "trusted", "untrusted"):
            raise ValueError("output must be 'trusted' or 'untrusted'")
        return cls(
            paths=rules_by_argument(paths, PathRule, "paths"),
            egress=rules_by_argument(egress, EgressRule, "egress"),
            provenance=rules_by_argument(
                ProvenanceRule.normalise(provenance), ProvenanceRule, "provenance"
            ),
            runtime=runtime or None,
            output_trusted=None if output is None else output == "trusted",
        )

    @classmethod
    def from_policy(
        cls, tool: str, checks: Mapping[str, Any], *, requires_approval: bool = False
    ) -> CheckSet:
        """Read a policy tool section: ``paths``, ``egress``, ``provenance``, ``runtime``..."""
        where = f"tools.{tool}"

        def table(name: str) -> Mapping[str, Any]:
            value = checks.get(name, {})
            if not isinstance(value, Mapping):
                raise PolicyError([(f"{where}.{name}", "must be a table/object")])
            return value

        paths = {
            arg: (PathRule.from_policy(v, f"{where}.paths.{arg}"),)
            for arg, v in table("paths").items()
        }
        egress = {
            arg: (EgressRule.from_policy(v, f"{where}.egress.{arg}"),)
            for arg, v in table("egress").items()
        }
        provenance = {
            arg: (ProvenanceRule.from_policy(v, f"{where}.provenance.{arg}"),)
            for arg, v in table("provenance").items()
        }
        output = checks.get("output")
        return cls(
            paths=paths,
            egress=egress,
            provenance=provenance,
            runtime=_runtime_from_policy(table("runtime"), f"{where}.runtime"),
            output_trusted=None if output is None else output == "trusted",
            requires_approval=requires_approval,
        )

    def merged(self, other: CheckSet) -> CheckSet:
        trusted = (
            self.output_trusted
            if other.output_trusted is None
            else other.output_trusted
            if self.output_trusted is None
            else self.output_trusted and other.output_trusted
        )
        runtime = self.runtime or other.runtime
        if self.runtime is not None and other.runtime is not None:
            runtime = Runtime(
                write_roots=tuple(set(self.runtime.write_roots) & set(other.runtime.write_roots)),
                subprocess=self.runtime.subprocess and other.runtime.subprocess,
                egress=tuple(r for r in self.runtime.egress if r in other.runtime.egress),
            )
        return CheckSet(
            paths=_merge(self.paths, other.paths),
            egress=_merge(self.egress, other.egress),
            provenance=_merge(self.provenance, other.provenance),
            runtime=runtime,
            output_trusted=trusted,
            requires_approval=self.requires_approval or other.requires_approval,
        )

    def run(self, arguments: Mapping[str, Any], record: dict[str, Any]) -> Denial | None:
        """Path then egress checks; fills ``record["paths"]``/``["egress"]`` for the ledger."""
        for argument, rules in self.paths.items():
            if argument in arguments and arguments[argument] is not None:
                for rule in rules:
                    denial = check_path(
                        argument, arguments[argument], rule, record.setdefault("paths", {})
                    )
                    if denial is not None:
                        return denial
        for argument, egress_rules in self.egress.items():
            if argument in arguments and arguments[argument] is not None:
                for egress_rule in egress_rules:
                    denial = check_url(
                        argument, arguments[argument], egress_rule, record.setdefault("egress", {})
                    )
                    if denial is not None:
                        return denial
        return None

    def label(self, arguments: Mapping[str, Any], record: dict[str, Any]) -> Denial | None:
        """Label argument values by provenance; check ``require = "trusted"`` rules."""
        provenance = current_provenance()
        if provenance is None:
            if self.provenance:
                return _untrusted(
                    next(iter(self.provenance)),
                    None,
                    [],
                    "deny",
                    "no Provenance is active, so no value can be trusted",
                )
            return None
        labels = {
            arg: provenance.labels(value)
            for arg, value in arguments.items()
            if isinstance(value, (str, int, float)) and not isinstance(value, bool)
        }
        record["provenance"] = labels
        for argument, rules in self.provenance.items():
            value = arguments.get(argument)
            values = value if isinstance(value, list) else [value]
            for item in values:
                if item is None or provenance.trusted(item):
                    continue
                mode = "deny" if any(r.on_untrusted == "deny" for r in rules) else "approval"
                if mode == "approval" and self.requires_approval:
                    continue  # pending anyway: the approver sees the labels in the input
                return _untrusted(
                    argument,
                    item,
                    provenance.labels(item),
                    mode,
                    "it does not occur in any trusted source",
                )
        return None

    def fence(self, tool: str) -> Fence | None:
        """The runtime fence for one call, or None when the tool has no runtime enforcement."""
        if self.runtime is None:
            return None
        roots = list(self.runtime.write_roots)
        for rules in self.paths.values():
            roots.extend(root for rule in rules if rule.write for root in rule.allow)
        egress = tuple(self.runtime.egress) + tuple(
            rule for rules in self.egress.values() for rule in rules
        )
        return Fence(
            tool=tool, write_roots=tuple(roots), egress=egress, subprocess=self.runtime.subprocess
        )


def _runtime_from_policy(data: Mapping[str, Any], where: str) -> Runtime | None:
    if not data:
        return None
    unknown = set(data) - {"enforce", "subprocess", "write_roots"}
    if unknown:
        raise PolicyError([(f"{where}.{sorted(unknown)[0]}", "unknown field")])
    if not all(isinstance(data.get(k, False), bool) for k in ("enforce", "subprocess")):
        raise PolicyError([(where, "enforce and subprocess are true or false")])
    if not data.get("enforce", True):
        return None
    return Runtime(
        write_roots=as_strings(data.get("write_roots", ()), f"{where}.write_roots"),
        subprocess=bool(data.get("subprocess", False)),
    )


def _untrusted(argument: str, value: Any, labels: list[str], mode: str, why: str) -> Denial:
    sources = [label for label in labels if "untrusted:" in label] or labels
    where = f" (found in {', '.join(sources)})" if sources else ""
    reason = {
        "code": DenyCode.UNTRUSTED_PROVENANCE.value,
        "argument": argument,
        "sources": labels,
        "message": f"{argument}={value!r}: {why}{where}",
    }
    if mode == "approval":
        # The engine goes pending only for policies with requires_approval; without an engine
        # hook a value that needs approval is denied, without a scar (the model was misled).
        reason["needs"] = "approval"
    return Denial(reason=reason, severity="minor" if mode == "deny" else None)


class PolicyChecks:
    """The policy's part of a tool's checks, read once per (store, agent): policies are fixed."""

    def __init__(self, tool: str, own: CheckSet) -> None:
        self._tool = tool
        self._own = own
        self._cache: weakref.WeakKeyDictionary[Store, dict[str, CheckSet]] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def for_agent(self, agent: Any) -> CheckSet:
        """The decorator's checks merged with ``agent``'s policy section (a ``LocalAgent``'s)."""
        store = getattr(getattr(agent, "guard", None), "store", None)
        agent_id = getattr(agent, "agent_id", None)
        if not isinstance(store, Store) or not isinstance(agent_id, str):
            return self._own
        with self._lock:
            found = self._cache.get(store, {}).get(agent_id)
        if found is not None:
            return found
        with store.transaction(write=False) as tx:
            rule = tx.agent(agent_id).policy.rule_for(self._tool)
        merged = (
            self._own
            if rule is None
            else self._own.merged(
                CheckSet.from_policy(
                    self._tool, rule.checks, requires_approval=rule.requires_approval
                )
            )
        )
        with self._lock:
            self._cache.setdefault(store, {})[agent_id] = merged
        return merged
