"""A tool's local checks, from its decorator and from its policy section, run before each request.

Precedence: both apply. A rule in the decorator and a rule in the agent's policy for the same
argument must both pass, so neither can widen the other; the policy's rules are read once per
agent (a policy never changes) from any agent guard that knows its policy (``LocalAgent``, and
``AgentClient`` through ``GET /v1/agents/{id}/policy``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from guardkit.checks._rules import as_strings, rules_by_argument
from guardkit.checks.egress import EgressRule, check_url
from guardkit.checks.paths import PathRule, check_path
from guardkit.checks.runtime import Fence, Runtime
from guardkit.decisions import Denial
from guardkit.errors import PolicyError
from guardkit.provenance import ProvenanceRule

__all__ = ["CheckSet"]


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

    def unknown_arguments(self, parameters: Mapping[str, inspect.Parameter]) -> list[str]:
        """Argument names a rule names but the tool doesn't take (a rule that could never run)."""
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
            return []
        named = {*self.paths, *self.egress, *self.provenance}
        return sorted(named - set(parameters))

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
