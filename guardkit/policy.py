"""Policies: Lineage's JSON shape (and the same fields in TOML), validated with every problem named.

A policy is fixed for the life of an agent. Example::

    policy = Policy.from_dict({
        "budget": 80, "scar_limit": 10,
        "rate_limit": {"max_actions": 30, "window_secs": 60},
        "tools": {
            "llm_turn": {"cost": 1},
            "restart_service": {"cost": 5, "requires_approval": True, "max_calls": 2},
        },
    })
"""

from __future__ import annotations

import difflib
import json
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guardkit._canonical import json_problem
from guardkit.decisions import JSONObject
from guardkit.errors import PolicyError
from guardkit.rules import Conditions, check_conditions
from guardkit.rules import narrowing_problems as rules_narrowing

__all__ = ["Policy", "RateLimit", "ToolRule", "load_policy"]

_TOP_FIELDS = {
    "budget",
    "scar_limit",
    "tools",
    "default_rule",
    "rate_limit",
    "approval_ttl",
    "description",
}
_RULE_FIELDS = {
    "cost",
    "requires_approval",
    "max_calls",
    "approval_ttl",
    "description",
    "rules",
    "input_schema",
}
#: Per-tool check sections read by the tool-wrapping layer; the engine stores them untouched.
CHECK_SECTIONS = frozenset({"paths", "egress", "output", "provenance", "runtime"})
_MAX_TOOL_NAME = 128
DEFAULT_SCAR_LIMIT = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimit:
    """A sliding-window cap on allowed actions across all tools."""

    #: Allowed actions per window.
    max_actions: int
    #: Window length in seconds.
    window_secs: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRule:
    """How one tool is priced and gated."""

    #: The minimum charge per call; a request may raise it, never lower it.
    cost: int
    #: Pending until an operator approves.
    requires_approval: bool = False
    #: Lifetime cap on allowed calls, or None.
    max_calls: int | None = None
    #: Seconds a pending approval stays valid (overrides the policy's).
    approval_ttl: float | None = None
    #: Check sections (``paths``, ``egress``, ``output``, ``provenance``, ``runtime``).
    checks: Mapping[str, Any] = field(default_factory=dict)
    description: str | None = None
    #: The ``input_schema`` and ordered ``rules`` over the call's input (``guardkit.rules``),
    #: compiled once; None when the tool has neither.
    conditions: Conditions | None = field(default=None, repr=False)

    def to_dict(self) -> JSONObject:
        out: JSONObject = {
            "cost": self.cost,
            "requires_approval": self.requires_approval,
            "max_calls": self.max_calls,
        }
        if self.approval_ttl is not None:
            out["approval_ttl"] = self.approval_ttl
        if self.description is not None:
            out["description"] = self.description
        if self.conditions is not None:
            if self.conditions.input_schema is not None:
                out["input_schema"] = self.conditions.input_schema
            if self.conditions.rules:
                out["rules"] = [rule.to_dict() for rule in self.conditions.rules]
        out.update(self.checks)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """An agent's fixed policy."""

    #: Lifetime credits, never refilled.
    budget: int
    #: Scar score at which the agent is terminated.
    scar_limit: int = DEFAULT_SCAR_LIMIT
    #: The allowlist.
    tools: Mapping[str, ToolRule] = field(default_factory=dict)
    #: Rule for unlisted tools; None denies them with a moderate scar.
    default_rule: ToolRule | None = None
    rate_limit: RateLimit | None = None
    #: Seconds a pending approval stays valid; None keeps it pending forever (Lineage).
    approval_ttl: float | None = None
    description: str | None = None

    def rule_for(self, tool: str) -> ToolRule | None:
        return self.tools.get(tool, self.default_rule)

    def ttl_for(self, tool: str) -> float | None:
        rule = self.tools.get(tool)
        if rule is not None and rule.approval_ttl is not None:
            return rule.approval_ttl
        return self.approval_ttl

    def to_dict(self) -> JSONObject:
        """The Lineage JSON shape, defaults filled in: what the ledger's policy record holds."""
        out: JSONObject = {
            "budget": self.budget,
            "scar_limit": self.scar_limit,
            "tools": {name: rule.to_dict() for name, rule in self.tools.items()},
            "default_rule": self.default_rule.to_dict() if self.default_rule else None,
            "rate_limit": (
                {
                    "max_actions": self.rate_limit.max_actions,
                    "window_secs": self.rate_limit.window_secs,
                }
                if self.rate_limit
                else None
            ),
        }
        if self.approval_ttl is not None:
            out["approval_ttl"] = self.approval_ttl
        if self.description is not None:
            out["description"] = self.description
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        """Validate ``data``; raise ``PolicyError`` naming every problem with its field path."""
        # First what no field rule sees: a lone surrogate (in a tool's name, say) or an integer
        # beyond Lineage's range anywhere, which the ledger could not hold.
        found = json_problem(dict(data), "") if isinstance(data, Mapping) else None
        if found is not None:
            raise PolicyError([found])
        problems: list[tuple[str, str]] = []
        policy = _parse_policy(data, problems)
        if problems or policy is None:
            raise PolicyError(problems or [("policy", "could not be parsed")])
        return policy

    @classmethod
    def from_json(cls, text: str) -> Policy:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PolicyError([("policy", f"not valid JSON: {exc}")]) from exc
        return cls.from_dict(data)

    @classmethod
    def from_toml(cls, text: str) -> Policy:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise PolicyError([("policy", f"not valid TOML: {exc}")]) from exc
        return cls.from_dict(data)

    def narrowing_problems(self, parent: Policy) -> list[tuple[str, str]]:
        """Ways this (child) policy would be wider than ``parent``; empty when it only narrows."""
        problems: list[tuple[str, str]] = []
        if self.scar_limit > parent.scar_limit:
            problems.append(
                ("scar_limit", f"{self.scar_limit} exceeds the parent's {parent.scar_limit}")
            )
        for name, rule in self.tools.items():
            parent_rule = parent.rule_for(name)
            if parent_rule is None:
                problems.append((f"tools.{name}", "the parent may not call this tool"))
            else:
                problems.extend(_rule_narrowing(f"tools.{name}", rule, parent_rule))
        if self.default_rule is not None:
            if parent.default_rule is None:
                problems.append(("default_rule", "the parent has no default rule"))
            else:
                problems.extend(
                    _rule_narrowing("default_rule", self.default_rule, parent.default_rule)
                )
        if parent.rate_limit is not None:
            mine = self.rate_limit
            if mine is None or (
                mine.max_actions / mine.window_secs
                > parent.rate_limit.max_actions / parent.rate_limit.window_secs
            ):
                problems.append(("rate_limit", "must be at least as strict as the parent's"))
        return problems


def load_policy(source: str | Path | Mapping[str, Any] | Policy) -> Policy:
    """Accept a Policy, a dict, JSON or TOML text, or a path to a ``.json``/``.toml`` file."""
    if isinstance(source, Policy):
        return source
    if isinstance(source, Mapping):
        return Policy.from_dict(source)
    if (
        isinstance(source, str)
        and "\n" not in source
        and source.strip().endswith((".json", ".toml"))
    ):
        source = Path(source.strip())
    if isinstance(source, Path):
        try:
            text = source.read_text(encoding="utf-8")
        except OSError as exc:
            raise PolicyError([("policy", f"cannot read {source}: {exc}")]) from exc
        return Policy.from_toml(text) if source.suffix == ".toml" else Policy.from_json(text)
    if isinstance(source, str):
        stripped = source.lstrip()
        return Policy.from_json(source) if stripped.startswith("{") else Policy.from_toml(source)
    raise PolicyError(
        [("policy", f"expected a dict, JSON, TOML or a path, got {type(source).__name__}")]
    )


def _rule_narrowing(path: str, child: ToolRule, parent: ToolRule) -> list[tuple[str, str]]:
    problems = []
    if child.cost < parent.cost:
        problems.append((f"{path}.cost", f"{child.cost} is below the parent's {parent.cost}"))
    if parent.requires_approval and not child.requires_approval:
        problems.append((f"{path}.requires_approval", "the parent requires approval"))
    if parent.max_calls is not None and (
        child.max_calls is None or child.max_calls > parent.max_calls
    ):
        problems.append((f"{path}.max_calls", f"must be at most the parent's {parent.max_calls}"))
    problems.extend(rules_narrowing(child.conditions, parent.conditions, path))
    return problems


#: The largest budget, cost or count a store can hold (a signed 64-bit integer).
MAX_INT = 2**63 - 1


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _check_unknown(
    data: Mapping[str, Any], known: set[str], path: str, problems: list[tuple[str, str]]
) -> None:
    for key in data:
        if key not in known:
            where = f"{path}.{key}" if path else str(key)
            close = difflib.get_close_matches(str(key), sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append((where, f"unknown field{hint}"))


def _nonneg_int(
    data: Mapping[str, Any],
    key: str,
    path: str,
    problems: list[tuple[str, str]],
    *,
    required: bool,
    default: int | None = None,
) -> int | None:
    where = f"{path}.{key}" if path else key
    if key not in data or data[key] is None:
        if required:
            problems.append((where, "is required"))
        return default
    value = data[key]
    if not _is_int(value) or value < 0:
        problems.append((where, f"must be a whole number >= 0, got {value!r}"))
        return default
    if value > MAX_INT:
        problems.append((where, f"must be at most {MAX_INT} (stores keep 64-bit integers)"))
        return default
    return int(value)


def _positive_number(
    data: Mapping[str, Any], key: str, path: str, problems: list[tuple[str, str]]
) -> float | None:
    where = f"{path}.{key}" if path else key
    value = data.get(key)
    if value is None:
        return None
    if not _is_number(value) or value <= 0:
        problems.append((where, f"must be a number > 0, got {value!r}"))
        return None
    return value  # type: ignore[no-any-return]


def _parse_rule(data: Any, path: str, problems: list[tuple[str, str]]) -> ToolRule | None:
    if not isinstance(data, Mapping):
        problems.append((path, f"must be a table/object, got {type(data).__name__}"))
        return None
    _check_unknown(data, _RULE_FIELDS | CHECK_SECTIONS, path, problems)
    cost = _nonneg_int(data, "cost", path, problems, required=True)
    requires_approval = data.get("requires_approval", False)
    if not isinstance(requires_approval, bool):
        problems.append((f"{path}.requires_approval", "must be true or false"))
    max_calls = _nonneg_int(data, "max_calls", path, problems, required=False)
    ttl = _positive_number(data, "approval_ttl", path, problems)
    if ttl is not None and requires_approval is not True:
        problems.append((f"{path}.approval_ttl", "is set but the tool does not require approval"))
    checks = {key: data[key] for key in CHECK_SECTIONS if key in data}
    for key, section in checks.items():
        if key == "output":
            if section not in ("trusted", "untrusted"):
                problems.append((f"{path}.output", "must be 'trusted' or 'untrusted'"))
        elif not isinstance(section, Mapping):
            problems.append((f"{path}.{key}", "must be a table/object"))
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        problems.append((f"{path}.description", "must be a string"))
    conditions = check_conditions(data, path, problems)
    if cost is None or not isinstance(requires_approval, bool):
        return None
    return ToolRule(
        cost=cost,
        requires_approval=requires_approval,
        max_calls=max_calls,
        approval_ttl=ttl,
        checks=checks,
        description=description,
        conditions=conditions,
    )


def _parse_rate_limit(data: Any, problems: list[tuple[str, str]]) -> RateLimit | None:
    if data is None:
        return None
    if not isinstance(data, Mapping):
        problems.append(("rate_limit", "must be a table/object or null"))
        return None
    _check_unknown(data, {"max_actions", "window_secs"}, "rate_limit", problems)
    max_actions = _nonneg_int(data, "max_actions", "rate_limit", problems, required=True)
    window = _positive_number(data, "window_secs", "rate_limit", problems)
    if "window_secs" not in data:
        problems.append(("rate_limit.window_secs", "is required"))
    if max_actions is None or window is None:
        return None
    return RateLimit(max_actions=max_actions, window_secs=window)


def _parse_tools(data: Any, problems: list[tuple[str, str]]) -> dict[str, ToolRule]:
    tools: dict[str, ToolRule] = {}
    if not isinstance(data, Mapping):
        problems.append(("tools", "is required and must be a table/object of tool rules"))
        return tools
    for name, raw in data.items():
        if not isinstance(name, str) or not 1 <= len(name) <= _MAX_TOOL_NAME:
            problems.append((f"tools.{name}", "tool names are 1-128 characters"))
            continue
        rule = _parse_rule(raw, f"tools.{name}", problems)
        if rule is not None:
            tools[name] = rule
    return tools


def _parse_policy(data: Any, problems: list[tuple[str, str]]) -> Policy | None:
    if not isinstance(data, Mapping):
        problems.append(("policy", f"must be a table/object, got {type(data).__name__}"))
        return None
    _check_unknown(data, _TOP_FIELDS, "", problems)
    budget = _nonneg_int(data, "budget", "", problems, required=True)
    scar_limit = _nonneg_int(
        data, "scar_limit", "", problems, required=False, default=DEFAULT_SCAR_LIMIT
    )
    tools = _parse_tools(data.get("tools"), problems)
    default_raw = data.get("default_rule")
    default_rule = (
        None if default_raw is None else _parse_rule(default_raw, "default_rule", problems)
    )
    rate_limit = _parse_rate_limit(data.get("rate_limit"), problems)
    ttl = _positive_number(data, "approval_ttl", "", problems)
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        problems.append(("description", "must be a string"))
    if budget is None or scar_limit is None:
        return None
    return Policy(
        budget=budget,
        scar_limit=scar_limit,
        tools=tools,
        default_rule=default_rule,
        rate_limit=rate_limit,
        approval_ttl=ttl,
        description=description,
    )
