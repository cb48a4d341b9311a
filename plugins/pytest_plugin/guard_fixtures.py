"""What the pytest plugin's fixtures hand out: the test policy, ``GuardLog`` and ``Approver``.

``GuardLog`` reads the guard's ledger (the source of truth), so it sees every decision however
it was reached: a decorator, the loop, or a direct ``agent.request``.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from guardkit.decisions import LedgerRecord, PendingAction
    from guardkit.local import Guard

__all__ = [
    "DEFAULT_AGENT_ID",
    "PERMISSIVE_POLICY",
    "Approver",
    "GuardLog",
    "LoggedDecision",
    "PolicyChoice",
    "resolve_policy",
]

DEFAULT_AGENT_ID = "agent"

#: Used when no marker, option or ini key names a policy: every tool allowed, nothing charged.
PERMISSIVE_POLICY: dict[str, Any] = {
    "budget": 1_000_000_000,
    "tools": {},
    "default_rule": {"cost": 0},
}


@dataclass(frozen=True, slots=True)
class PolicyChoice:
    """The policy the ``guard`` fixture uses and where it came from (for error messages)."""

    policy: Any
    agent_id: str
    source: str


def resolve_policy(
    marker_args: tuple[Any, ...] | None,
    marker_kwargs: Mapping[str, Any] | None,
    option: str | None,
    ini: str | None,
    *,
    test_dir: Path,
    invocation_dir: Path,
    root_dir: Path,
) -> PolicyChoice:
    """Marker beats ``--guard-policy`` beats the ``guard_policy`` ini key beats the default.

    A marker takes a dict, a path (relative to the test file) or policy fields as keywords
    (merged over the positional policy); ``agent_id=`` names the agent. The option's path is
    relative to where pytest was started, the ini key's to the rootdir.
    """
    if marker_args is not None or marker_kwargs is not None:
        fields = dict(marker_kwargs or {})
        agent_id = str(fields.pop("agent_id", DEFAULT_AGENT_ID))
        base: Any = marker_args[0] if marker_args else (None if fields else PERMISSIVE_POLICY)
        if isinstance(base, (str, Path)):
            base = _read(test_dir / base)
        policy = {**(base or {}), **fields} if fields else base
        return PolicyChoice(policy, agent_id, "marker")
    if option:
        return PolicyChoice(_read(invocation_dir / option), DEFAULT_AGENT_ID, "--guard-policy")
    if ini:
        return PolicyChoice(_read(root_dir / ini), DEFAULT_AGENT_ID, "guard_policy ini")
    return PolicyChoice(dict(PERMISSIVE_POLICY), DEFAULT_AGENT_ID, "default")


def _read(path: Path) -> Any:
    from guardkit.policy import load_policy

    return load_policy(path).to_dict()


class LoggedDecision(NamedTuple):
    """One decision from the ledger: ``pending_approval``, ``allowed`` or ``denied``."""

    agent_id: str
    action_id: str
    tool: str
    decision: str
    code: str | None

    def line(self) -> str:
        code = f" ({self.code})" if self.code else ""
        return f"{self.tool}: {self.decision}{code}"


_VERDICTS: dict[str, tuple[str, str | None]] = {
    "approval_required": ("pending_approval", None),
    "action_allowed": ("allowed", None),
    "action_denied": ("denied", None),
    "action_rejected": ("denied", "rejected"),
}


def _decisions(agent_id: str, records: Iterable[Mapping[str, Any]]) -> list[LoggedDecision]:
    tools: dict[str, str] = {}
    out: list[LoggedDecision] = []
    for record in records:
        kind, payload = record["kind"], record["payload"]
        if kind == "action_requested":
            tools[payload["action_id"]] = payload["tool"]
            continue
        verdict = _VERDICTS.get(kind)
        if verdict is None:
            continue
        code = verdict[1]
        if kind == "action_denied":
            reason = payload.get("reason")
            code = str(reason.get("code")) if isinstance(reason, Mapping) else None
        action_id = payload["action_id"]
        out.append(LoggedDecision(agent_id, action_id, tools.get(action_id, "?"), verdict[0], code))
    return out


class GuardLog:
    """The decisions made during one test, with assertions that print the whole sequence."""

    def __init__(self, guard: Guard, agent_ids: Callable[[], list[str]]) -> None:
        self._guard = guard
        self._agent_ids = agent_ids

    @property
    def decisions(self) -> list[LoggedDecision]:
        """Every decision, in ledger order (per agent, agents in creation order)."""
        out: list[LoggedDecision] = []
        for agent_id in self._agent_ids():
            out.extend(_decisions(agent_id, self._records(agent_id)))
        return out

    def _records(self, agent_id: str) -> list[LedgerRecord]:
        records: list[LedgerRecord] = []
        after: int | None = None
        while True:
            page = self._guard.log(agent_id, after=after, limit=5000)["records"]
            records.extend(page)
            if len(page) < 5000:
                return records
            after = page[-1]["seq"]

    def of(self, tool: str, decision: str | None = None) -> list[LoggedDecision]:
        return [
            d
            for d in self.decisions
            if d.tool == tool and (decision is None or d.decision == decision)
        ]

    def __str__(self) -> str:
        lines = [f"  {d.agent_id} {d.action_id} {d.line()}" for d in self.decisions]
        return "\n".join(lines) if lines else "  (no decisions)"

    def _fail(self, expectation: str) -> None:
        raise AssertionError(f"{expectation}; the guard's decisions were:\n{self}")

    def assert_allowed(self, tool: str, *, times: int | None = None) -> None:
        """``tool`` was allowed at least once (exactly ``times`` times when given)."""
        count = len(self.of(tool, "allowed"))
        if (times is None and count == 0) or (times is not None and count != times):
            wanted = "at least once" if times is None else f"{times} time(s)"
            self._fail(f"expected {tool!r} to be allowed {wanted}, it was allowed {count}")

    def assert_denied(self, tool: str, *, code: str | None = None) -> None:
        """``tool`` was denied at least once (with deny code ``code`` when given)."""
        denied = self.of(tool, "denied")
        if not any(code is None or d.code == code for d in denied):
            with_code = f" with code {code!r}" if code else ""
            self._fail(f"expected a denial of {tool!r}{with_code}")

    def assert_pending(self, tool: str) -> None:
        """``tool`` was held for a human's approval at least once."""
        if not self.of(tool, "pending_approval"):
            self._fail(f"expected {tool!r} to wait for approval")

    def assert_never_ran(self, tool: str) -> None:
        """The guard never let ``tool`` run: no action of it was ever allowed."""
        if self.of(tool, "allowed"):
            self._fail(f"expected {tool!r} never to be allowed to run")

    def assert_sequence(self, expected: Iterable[str]) -> None:
        """The decisions, as ``"tool: decision"`` or ``"tool: denied (code)"`` lines, in order.

        A mismatch is shown as a unified diff of the two sequences.
        """
        want = list(expected)
        got = [d.line() for d in self.decisions]
        if want != got:
            diff = difflib.unified_diff(want, got, "expected", "guard log", lineterm="")
            raise AssertionError("the guard's decisions differ:\n" + "\n".join(diff))


Predicate = Callable[["PendingAction"], bool]


@dataclass(frozen=True, slots=True)
class _Rule:
    tool: str | None
    when: Predicate | None
    approve: bool
    text: str | None
    scar: str | None

    def matches(self, action: PendingAction) -> bool:
        if self.tool is not None and action["tool"] != self.tool:
            return False
        return self.when is None or bool(self.when(action))


class Approver:
    """Decides pending actions during a test, by rules, from a background thread.

    >>> approver.approve("pay", when=lambda action: action["cost"] <= 100)
    >>> approver.reject("pay", reason="over the limit")

    Rules are tried in the order they were added. An action no rule matches fails the test that
    waits for it, at once or after ``guard_approval_wait`` seconds (``guard_approvals``).
    """

    def __init__(self, guard: Guard, name: str = "pytest", poll: float = 0.005) -> None:
        self._guard = guard
        self.name = name
        self._poll = poll
        self._rules: list[_Rule] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: ``(agent_id, action_id, tool, "approved" | "rejected")`` for every action decided.
        self.decided: list[tuple[str, str, str, str]] = []

    def approve(
        self, tool: str | None = None, *, when: Predicate | None = None, note: str | None = None
    ) -> Approver:
        return self._add(_Rule(tool, when, True, note, None))

    def reject(
        self,
        tool: str | None = None,
        *,
        when: Predicate | None = None,
        reason: str = "rejected by the test's approver",
        scar: str | None = None,
    ) -> Approver:
        return self._add(_Rule(tool, when, False, reason, scar))

    def _add(self, rule: _Rule) -> Approver:
        self._rules.append(rule)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="guardkit-approver", daemon=True)
            self._thread.start()
        return self

    def will_decide(self, action: PendingAction) -> bool:
        """Whether one of the rules matches ``action`` (its thread will decide it)."""
        return any(rule.matches(action) for rule in self._rules)

    def _run(self) -> None:
        while not self._stop.wait(self._poll):
            self.decide_pending()

    def decide_pending(self) -> int:
        """Apply the rules to every pending action now; returns how many were decided."""
        count = 0
        for agent in self._guard.agents():
            agent_id = agent["agent_id"]
            for pending in self._guard.pending(agent_id):
                action = pending["action"]
                rule = next((r for r in self._rules if r.matches(action)), None)
                if rule is not None:
                    self._apply(agent_id, action, rule)
                    count += 1
        return count

    def _apply(self, agent_id: str, action: PendingAction, rule: _Rule) -> None:
        from guardkit.errors import InvalidState

        action_id = action["action_id"]
        try:
            if rule.approve:
                self._guard.approve(agent_id, action_id, self.name, rule.text)
            else:
                reason = rule.text or "rejected"
                self._guard.reject(agent_id, action_id, self.name, reason, rule.scar)
        except InvalidState:
            return  # decided by someone else in the meantime
        verdict = "approved" if rule.approve else "rejected"
        self.decided.append((agent_id, action_id, action["tool"], verdict))

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
