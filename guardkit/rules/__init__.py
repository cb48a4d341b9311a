"""Rules over a call's input: per tool, an ``input_schema`` and an ordered list of rules.

Policy shape (the same fields in JSON and TOML)::

    "pay_invoice": {
        "cost": 1,
        "input_schema": {"type": "object", "required": ["iban", "amount"]},
        "rules": [
            {"when": {"properties": {"iban": {"not": {"enum": ["DE89..."]}}}},
             "effect": "deny", "reason": "IBAN not on the vendor list"},
            {"when": {"properties": {"amount": {"exclusiveMinimum": 100}}},
             "effect": "requires_approval", "reason": "payments over 100 need a human"},
        ],
    }

``judge`` answers for one call, after the ``terminated`` and ``tool_not_allowed`` checks and
before the tool's caps, rate limit and budget: input that fails ``input_schema`` is denied
``invalid_input`` (the model's mistake: a minor scar); then the first rule whose ``when`` the
input satisfies decides: ``deny`` (``rule_denied``, scarred moderate like a policy violation),
``requires_approval`` (pending, the rule's reason shown to the approver) or ``allow`` (no more
rules are read). The tool's own settings apply after any of them: an ``allow`` rule never waives
the tool's ``requires_approval``. A helper keyword that cannot judge a value (a compound shell
command, a relative path, a murky URL) refuses the call by the rule that reached it, unless that
rule matches such values explicitly (``x-shell-compound``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from guardkit.decisions import Denial, DenyCode, JSONObject, Reason, Severity
from guardkit.rules.fast import Predicate, compile_predicate, equal
from guardkit.rules.schema import Problems, check_schema, explain, validator
from guardkit.rules.shell import CannotJudge

__all__ = [
    "APPROVAL_CODE",
    "CannotJudge",
    "Conditions",
    "EFFECTS",
    "NO_VERDICT",
    "RESERVED_CODES",
    "Rule",
    "Verdict",
    "check_conditions",
    "narrowing_problems",
]

Effect = Literal["deny", "requires_approval", "allow"]
EFFECTS: tuple[Effect, ...] = ("deny", "requires_approval", "allow")
#: The code of the reason an ``approval_required`` record carries when a rule asked for it.
APPROVAL_CODE = "rule_requires_approval"
#: Codes only the engine's rules may record (the ledger's replay checks the rule they name).
RESERVED_CODES = frozenset({APPROVAL_CODE, DenyCode.RULE_DENIED.value})
_RULE_FIELDS = frozenset({"when", "effect", "reason"})


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the rules say about one call: a denial, a reason to ask a human, or neither."""

    denial: Denial | None = None
    #: The reason recorded on ``approval_required`` (the approver reads it).
    approval: Reason | None = None
    #: The index of the rule that decided, if one did.
    rule: int | None = None


NO_VERDICT = Verdict()


def _matcher(schema: Any) -> Predicate:
    fast = compile_predicate(schema)
    if fast is not None:
        return fast
    is_valid: Predicate = validator(schema).is_valid
    return is_valid


@dataclass(frozen=True, slots=True)
class Rule:
    """One checked rule: its condition compiled once."""

    when: Any
    effect: Effect
    reason: str | None
    matches: Predicate

    def to_dict(self) -> JSONObject:
        out: JSONObject = {"when": self.when, "effect": self.effect}
        if self.reason is not None:
            out["reason"] = self.reason
        return out


class Conditions:
    """A tool's ``input_schema`` and ``rules``, checked and compiled (``check_conditions``)."""

    __slots__ = ("_input", "input_schema", "rules")

    def __init__(self, input_schema: Any, rules: Sequence[Mapping[str, Any]]) -> None:
        self.input_schema = input_schema
        self._input = None if input_schema is None else _matcher(input_schema)
        self.rules = tuple(
            Rule(r["when"], r["effect"], r.get("reason"), _matcher(r["when"])) for r in rules
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Conditions):
            return NotImplemented
        mine = [r.to_dict() for r in self.rules]
        theirs = [r.to_dict() for r in other.rules]
        return equal([self.input_schema, mine], [other.input_schema, theirs])

    __hash__ = None  # type: ignore[assignment]

    def judge(self, tool: str, value: Any) -> Verdict:
        """The verdict on ``value`` (the call's input) for ``tool``; never raises."""
        check = self._input
        if check is not None:
            try:
                valid, why, argument = check(value), "", None
            except CannotJudge as exc:
                valid, why, argument = False, f"cannot be judged: {exc}", None
            if not valid:
                if not why:
                    why, argument = explain(self.input_schema, value)
                reason: Reason = {
                    "code": DenyCode.INVALID_INPUT.value,
                    "tool": tool,
                    "message": why,
                }
                if argument is not None:
                    reason["argument"] = argument
                return Verdict(denial=Denial(reason=reason, severity=Severity.MINOR))
        for index, rule in enumerate(self.rules):
            try:
                if not rule.matches(value):
                    continue
            except CannotJudge as exc:
                message = (
                    f"cannot judge {exc}; a rule must match such input explicitly "
                    "(x-shell-compound) for it to run"
                )
                return _denied(tool, index, message, Severity.MINOR)
            if rule.effect == "deny":
                return _denied(tool, index, rule.reason or "", Severity.MODERATE)
            if rule.effect == "requires_approval":
                approval: Reason = {"code": APPROVAL_CODE, "tool": tool, "rule": index}
                if rule.reason is not None:
                    approval["message"] = rule.reason
                return Verdict(approval=approval, rule=index)
            return Verdict(rule=index)
        return NO_VERDICT


def _denied(tool: str, index: int, message: str, severity: Severity) -> Verdict:
    reason: Reason = {
        "code": DenyCode.RULE_DENIED.value,
        "tool": tool,
        "rule": index,
        "message": message,
    }
    return Verdict(denial=Denial(reason=reason, severity=severity), rule=index)


def check_conditions(data: Mapping[str, Any], path: str, problems: Problems) -> Conditions | None:
    """Check a tool section's ``input_schema`` and ``rules``; compile them when all is well."""
    before = len(problems)
    schema = data.get("input_schema")
    if schema is not None:
        problems.extend(check_schema(schema, f"{path}.input_schema"))
    rules = data.get("rules", [])
    if not isinstance(rules, list):
        problems.append((f"{path}.rules", "must be a list of rules"))
        return None
    for index, rule in enumerate(rules):
        _check_rule(rule, f"{path}.rules[{index}]", problems)
    if len(problems) > before or (schema is None and not rules):
        return None
    return Conditions(schema, rules)


def _check_rule(rule: Any, where: str, problems: Problems) -> None:
    if not isinstance(rule, Mapping):
        problems.append((where, "must be a table/object with when, effect and reason"))
        return
    for key in rule:
        if key not in _RULE_FIELDS:
            problems.append((f"{where}.{key}", "unknown field"))
    effect = rule.get("effect")
    if effect not in EFFECTS:
        problems.append((f"{where}.effect", "must be 'deny', 'requires_approval' or 'allow'"))
    if "when" not in rule:
        problems.append((f"{where}.when", "is required (use {} or true to match every call)"))
    else:
        problems.extend(check_schema(rule["when"], f"{where}.when"))
    reason = rule.get("reason")
    if reason is None and effect in ("deny", "requires_approval"):
        problems.append((f"{where}.reason", "is required: the model and the approver read it"))
    elif reason is not None and (not isinstance(reason, str) or not reason.strip()):
        problems.append((f"{where}.reason", "must be a non-empty string"))


# -- sub-agents ----------------------------------------------------------------------------------


def narrowing_problems(child: Conditions | None, parent: Conditions | None, path: str) -> Problems:
    """Ways a child tool's rules would loosen its parent's; empty when they only add to them.

    The child keeps the parent's ``input_schema`` (the same, or inside an ``allOf``) and every
    parent rule, in order. A rule the child adds after all of them is always fine; added before
    parent rule ``k`` it could take inputs from rules ``k`` on, so it must be a ``deny``, or a
    ``requires_approval`` with no ``deny`` among them.
    """
    if parent is None:
        return []
    problems: Problems = []
    if parent.input_schema is not None and not _keeps_schema(
        None if child is None else child.input_schema, parent.input_schema
    ):
        problems.append(
            (f"{path}.input_schema", "must be the parent's, or an allOf that includes it")
        )
    mine = [] if child is None else [r.to_dict() for r in child.rules]
    theirs = [r.to_dict() for r in parent.rules]
    k = 0
    for index, rule in enumerate(mine):
        if k < len(theirs) and equal(rule, theirs[k]):
            k += 1
            continue
        later = {r["effect"] for r in theirs[k:]}
        effect = rule["effect"]
        if later and not (
            effect == "deny" or (effect == "requires_approval" and "deny" not in later)
        ):
            problems.append(
                (
                    f"{path}.rules[{index}]",
                    f"a {effect} rule before the parent's rules[{k}] could loosen them: add it "
                    "after the parent's rules, or make it stricter",
                )
            )
    if k < len(theirs):
        problems.append(
            (f"{path}.rules", f"must keep the parent's rules in order (rules[{k}] is missing)")
        )
    return problems


def _keeps_schema(child: Any, parent: Any) -> bool:
    if child is None:
        return False
    if equal(child, parent):
        return True
    return isinstance(child, dict) and any(equal(s, parent) for s in child.get("allOf", ()))
