"""A model-based stateful test of the guard over a file-backed ledger (LINEAGE §5-§10).

Hypothesis drives a ``Guard`` on a SQLite file through requests (listed and unlisted tools,
declared costs), approvals, rejections, outcomes, operator scars, terminations, reopenings and
clock moves (so rate limits bite), and checks every decision against a small reference model of
Lineage's semantics, plus the invariants that must hold whatever the model says. Now and then it
edits one column of one row of a copy of the database, as an attacker would, and checks that
opening the copy refuses the agent.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import strategies
from hypothesis import assume, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from guardkit import AlreadyTerminated, Guard, InvalidState
from guardkit.decisions import SCAR_CAP

AGENT = "bot"
#: Requests before an operator may terminate or fatally scar (either ends the interesting part).
LATE = 8


@dataclass
class Model:
    """What Lineage says the agent's state is, computed independently of the engine."""

    policy: dict[str, Any]
    spent: int = 0
    score: int = 0
    alive: bool = True
    reason: str | None = None
    next_action: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    allowed_at: list[float] = field(default_factory=list)
    #: action id -> (tool, cost) of actions waiting for an operator.
    pending: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: Allowed actions with no outcome yet, and actions that can take none (any more).
    open: set[str] = field(default_factory=set)
    closed: set[str] = field(default_factory=set)
    allowed: int = 0
    denied: int = 0
    scars: list[str] = field(default_factory=list)

    @property
    def remaining(self) -> int:
        return int(self.policy["budget"]) - self.spent

    def rule(self, tool: str) -> dict[str, Any] | None:
        rule: dict[str, Any] | None = self.policy["tools"].get(tool)
        return rule

    def terminate(self, reason: str) -> None:
        if self.alive:
            self.alive, self.reason = False, reason

    def scar(self, severity: str) -> None:
        self.scars.append(severity)
        self.score = strategies.add_scar(self.score, severity)
        limit = self.policy["scar_limit"]
        if self.alive and self.score >= limit:
            self.terminate(f"scar limit reached ({self.score} >= {limit})")

    def checks(self, tool: str, cost: int, now: float) -> tuple[str, str | None] | None:
        """The first failing check of §5 as ``(code, scar severity)``, or None."""
        if not self.alive:
            return "terminated", None
        rule = self.rule(tool)
        if rule is None:
            return "tool_not_allowed", "moderate"
        if rule["max_calls"] is not None and self.counts.get(tool, 0) >= rule["max_calls"]:
            return "tool_call_limit", "minor"
        rate = self.policy["rate_limit"]
        if rate is not None:
            in_window = sum(1 for t in self.allowed_at if t > now - rate["window_secs"])
            if in_window >= rate["max_actions"]:
                return "rate_limited", "minor"
        if cost > self.remaining:
            return "insufficient_budget", None
        return None

    def deny(self, action_id: str, severity: str | None) -> None:
        self.denied += 1
        self.closed.add(action_id)
        if severity is not None:
            self.scar(severity)

    def allow(self, action_id: str, tool: str, cost: int, now: float) -> None:
        self.spent += cost
        self.allowed += 1
        self.counts[tool] = self.counts.get(tool, 0) + 1
        self.allowed_at.append(now)
        self.open.add(action_id)
        if self.remaining == 0:
            self.terminate("budget exhausted")


class GuardMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="guardkit-stateful-")
        self.path = str(Path(self.dir) / "guard.db")
        self.clock = strategies.FakeClock()
        self.guard: Guard | None = None
        self.model: Model | None = None
        self.was_terminated = False

    def _open(self) -> Guard:
        return Guard(self.path, clock=self.clock, durability="normal")

    @property
    def g(self) -> Guard:
        assert self.guard is not None
        return self.guard

    @property
    def m(self) -> Model:
        assert self.model is not None
        return self.model

    def teardown(self) -> None:
        try:
            if self.model is not None and self.guard is not None:
                event(f"requests: {min(self.m.next_action // 10 * 10, 30)}+")
                self.check_ledger_records()
        finally:
            if self.guard is not None:
                self.guard.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    @initialize(policy=strategies.policies())
    def create(self, policy: dict[str, Any]) -> None:
        self.guard = self._open()
        self.g.create_agent(AGENT, policy)
        self.model = Model(policy=policy)

    # -- rules -----------------------------------------------------------------------------------

    # Requests are what the guard is about: three rules draw them, so about a third of all steps
    # are requests (hypothesis picks among enabled rules uniformly).

    @rule(data=st.data(), payload=strategies.inputs)
    def request(self, data: st.DataObject, payload: Any) -> None:
        self._draw_request(data, payload)

    @rule(data=st.data())
    def request_again(self, data: st.DataObject) -> None:
        self._draw_request(data, None)

    @rule(data=st.data())
    def request_at_list_price(self, data: st.DataObject) -> None:
        tool = data.draw(st.sampled_from(sorted(self.m.policy["tools"])), label="tool")
        self._request(tool, {"q": 1}, None)

    def _draw_request(self, data: st.DataObject, payload: Any) -> None:
        """Mostly the policy's own tools, sometimes a tripwire; costs often at the budget's edge."""
        m = self.m
        listed = sorted(m.policy["tools"])
        tool = data.draw(
            st.sampled_from(listed * 4 + list(strategies.UNLISTED_TOOLS[:1])), label="tool"
        )
        edge = [c for c in (m.remaining - 1, m.remaining, m.remaining + 1) if c >= 0]
        cost = data.draw(strategies.declared_costs | st.sampled_from(edge), label="cost")
        self._request(tool, payload, cost)

    def _request(self, tool: str, data: Any, cost: int | None) -> None:
        m, now = self.m, self.clock.now
        rule_ = m.rule(tool)
        charge = (cost or 0) if rule_ is None else max(cost or 0, rule_["cost"])
        m.next_action += 1
        action_id = f"act-{m.next_action}"
        decision = self.g.agent(AGENT).request(tool, data, cost)
        event(
            decision["reason"]["code"] if decision["decision"] == "denied" else decision["decision"]
        )
        assert decision["action_id"] == action_id
        failed = m.checks(tool, charge, now)
        if failed is not None:
            code, severity = failed
            assert decision["decision"] == "denied", decision
            assert decision["reason"]["code"] == code, decision
            m.deny(action_id, severity)
        elif rule_ is not None and rule_["requires_approval"]:
            assert decision == {"decision": "pending_approval", "action_id": action_id}
            m.pending[action_id] = (tool, charge)
        else:
            m.allow(action_id, tool, charge, now)
            assert decision == {
                "decision": "allowed",
                "action_id": action_id,
                "cost": charge,
                "remaining": m.remaining,
            }
        if self.was_terminated:
            assert decision["decision"] == "denied"
            assert decision["reason"]["code"] == "terminated"

    @precondition(lambda self: self.model is not None and self.m.pending)
    @rule(data=st.data())
    def approve(self, data: st.DataObject) -> None:
        m, now = self.m, self.clock.now
        action_id = data.draw(st.sampled_from(sorted(m.pending)))
        tool, charge = m.pending.pop(action_id)
        decision = self.g.approve(AGENT, action_id, "alice")
        failed = m.checks(tool, charge, now)
        if failed is not None:
            assert decision["decision"] == "denied", decision
            assert decision["reason"]["code"] == failed[0], decision
            m.deny(action_id, failed[1])
        else:
            m.allow(action_id, tool, charge, now)
            assert decision == {
                "decision": "allowed",
                "action_id": action_id,
                "cost": charge,
                "remaining": m.remaining,
            }

    @precondition(lambda self: self.model is not None and self.m.pending)
    @rule(data=st.data(), scar=st.none() | strategies.severities)
    def reject(self, data: st.DataObject, scar: str | None) -> None:
        action_id = data.draw(st.sampled_from(sorted(self.m.pending)))
        del self.m.pending[action_id]
        if scar == "fatal" and self.m.next_action < LATE:
            scar = "moderate"
        decision = self.g.reject(AGENT, action_id, "alice", "no", scar)
        assert decision["decision"] == "denied"
        assert decision["reason"] == {"code": "rejected", "by": "alice", "reason": "no"}
        self.m.deny(action_id, scar)

    @precondition(lambda self: self.model is not None and self.m.open)
    @rule(data=st.data(), status=st.sampled_from(["success", "failure", "harmful"]))
    def report(self, data: st.DataObject, status: str) -> None:
        action_id = data.draw(st.sampled_from(sorted(self.m.open)))
        if status == "harmful":
            self.g.report_harm(AGENT, action_id, "broke it")
        else:
            self.g.agent(AGENT).report(action_id, status, "done")
        self.m.open.discard(action_id)
        self.m.closed.add(action_id)
        if status != "success":
            self.m.scar("minor" if status == "failure" else "severe")

    @precondition(lambda self: self.model is not None and self.m.closed)
    @rule(data=st.data(), status=st.sampled_from(["success", "failure"]))
    def report_closed_action(self, data: st.DataObject, status: str) -> None:
        """A second outcome, or one for a denied action, is refused and changes nothing."""
        action_id = data.draw(st.sampled_from(sorted(self.m.closed)))
        before = self.g.status(AGENT)
        try:
            self.g.agent(AGENT).report(action_id, status, "again")
        except InvalidState:
            pass
        else:
            raise AssertionError(f"a second outcome for {action_id} was accepted")
        assert self.g.status(AGENT) == before

    @rule(
        severity=st.sampled_from(["minor", "minor", "moderate", "severe", "fatal"]), data=st.data()
    )
    def operator_scar(self, severity: str, data: st.DataObject) -> None:
        ids = sorted(self.m.open | self.m.closed | set(self.m.pending))
        action_id = data.draw(st.none() | st.sampled_from(ids)) if ids else None
        self.g.scar(AGENT, severity, "monitor saw something", action_id)
        self.m.scar(severity)

    @precondition(lambda self: self.model is not None and self.m.next_action >= LATE)
    @rule()
    def terminate(self) -> None:
        if self.m.alive:
            status = self.g.terminate(AGENT, "operator pulled the plug", "alice")
            assert status["alive"] is False
            self.m.terminate("operator pulled the plug")
        else:
            try:
                self.g.terminate(AGENT, "again", "alice")
            except AlreadyTerminated:
                pass
            else:
                raise AssertionError("terminating a terminated agent succeeded")

    @rule()
    def reopen(self) -> None:
        before = self.g.status(AGENT)
        self.g.close()
        self.guard = None
        self.guard = self._open()
        assert self.g.quarantined == {}
        assert self.g.status(AGENT) == before

    @rule(data=st.data())
    def tamper_with_a_copy(self, data: st.DataObject) -> None:
        """Any edit of any column of any row (agents, ledger records, their index) is caught."""
        copy = Path(self.dir) / "copy.db"
        with closing(sqlite3.connect(self.path)) as src, closing(sqlite3.connect(copy)) as dst:
            src.backup(dst)
        shutil.copyfile(self.path + ".witness", str(copy) + ".witness")
        try:
            with closing(sqlite3.connect(copy)) as conn, conn:
                table, key, column, old = data.draw(st.sampled_from(_cells(conn)), label="cell")
                new = data.draw(_edits(old), label="new value")
                assume(new != old)
                where = " AND ".join(f"{name} = ?" for name in key)
                try:
                    conn.execute(
                        f"UPDATE {table} SET {column} = ? WHERE {where}", (new, *key.values())
                    )
                except sqlite3.IntegrityError:
                    assume(False)
            event(f"tampered with {table}.{column}")
            with Guard(str(copy)) as tampered:
                assert tampered.quarantined, f"{table}.{column}: {old!r} -> {new!r} went unnoticed"
        finally:
            for leftover in Path(self.dir).glob("copy.db*"):
                leftover.unlink()

    @rule(data=st.data())
    def advance_clock(self, data: st.DataObject) -> None:
        """Small steps, and steps that land exactly on (or just past) the rate window's edge."""
        rate = self.m.policy["rate_limit"]
        window = rate["window_secs"] if rate else 10
        seconds = data.draw(
            st.sampled_from([0.5, 1, window - 1, window, window + 1]) | st.integers(0, 15),
            label="seconds",
        )
        self.clock.advance(seconds)

    # -- invariants ------------------------------------------------------------------------------

    @invariant()
    def status_matches_the_model(self) -> None:
        if self.model is None:
            return
        m, status = self.m, self.g.status(AGENT)
        budget = m.policy["budget"]
        assert status["spent"] + status["remaining"] == budget
        assert 0 <= status["spent"] <= budget
        weights = 0
        for scar in status["scars"]:
            weights = strategies.add_scar(weights, scar["severity"])
        assert status["scar_score"] == weights <= SCAR_CAP
        assert [s["severity"] for s in status["scars"]] == m.scars
        expected = {
            "spent": m.spent,
            "scar_score": m.score,
            "alive": m.alive,
            "termination_reason": m.reason,
            "actions_allowed": m.allowed,
            "actions_denied": m.denied,
            "actions_pending": len(m.pending),
        }
        assert {k: status[k] for k in expected} == expected
        if self.was_terminated:
            assert not status["alive"]
        self.was_terminated = not status["alive"]

    @invariant()
    def ledger_verifies(self) -> None:
        if self.model is not None:
            assert self.g.verify(AGENT)["ok"]

    def check_ledger_records(self) -> None:
        """Ids ``act-1..act-N`` in request order, at most one outcome each, one termination."""
        records = self.g.log(AGENT, limit=5000)["records"]
        requested = [r["payload"]["action_id"] for r in records if r["kind"] == "action_requested"]
        assert requested == [f"act-{n}" for n in range(1, self.m.next_action + 1)]
        outcomes = [r["payload"]["action_id"] for r in records if r["kind"] == "outcome"]
        assert len(outcomes) == len(set(outcomes))
        assert set(outcomes) <= {
            r["payload"]["action_id"] for r in records if r["kind"] == "action_allowed"
        }
        assert sum(r["kind"] == "terminated" for r in records) == (0 if self.m.alive else 1)


_KEYS = {"agents": ("agent_id",), "records": ("agent_id", "seq")}


def _cells(conn: sqlite3.Connection) -> list[tuple[str, dict[str, Any], str, Any]]:
    """Every (table, row key, column, value) of the tables that hold what the guard knows."""
    cells = []
    for table, key in _KEYS.items():
        cursor = conn.execute(f"SELECT * FROM {table}")
        columns = [d[0] for d in cursor.description]
        for row in cursor.fetchall():
            values = dict(zip(columns, row, strict=True))
            ids = {name: values[name] for name in key}
            cells.extend((table, ids, column, value) for column, value in values.items())
    return cells


def _edits(old: Any) -> st.SearchStrategy[Any]:
    """A value an attacker might write instead of ``old``."""
    if old is None:
        return st.sampled_from(["x", 1, "ab" * 32])
    if isinstance(old, int):
        return st.integers(-2, 2).map(lambda d: old + d) | st.none()
    text = str(old)

    @st.composite
    def edited(draw: st.DrawFn) -> Any:
        where = draw(st.integers(0, len(text)))
        char = draw(st.sampled_from('0a1Z"} .:-'))
        how = draw(st.sampled_from(["replace", "insert", "cut"]))
        if how == "replace" and where < len(text):
            return text[:where] + char + text[where + 1 :]
        if how == "cut":
            return text[:where]
        return text[:where] + char + text[where:]

    return edited() | st.none()


TestGuardMachine = GuardMachine.TestCase
# Steps are cheap (a few ms each): twice the profile's examples, and twice as long.
TestGuardMachine.settings = settings(
    max_examples=2 * settings().max_examples,
    stateful_step_count=2 * settings().stateful_step_count,
)
