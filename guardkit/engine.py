"""The guard state machine: request, approve, reject, report, scar, terminate, spawn, consume.

Every operation runs in one store transaction that loads (and locks) the agent's verified state,
appends ledger records and commits before it returns, so every decision is durable before anyone
sees it. The engine only decides and appends: what a record does to the agent's state (budget,
scars, counts, open actions) is ``guardkit.store.fold``'s, the same fold that replays a ledger.
Denials are values (``Decision``); errors are raised only for misuse (unknown ids, wrong states,
bad input). Semantics are Lineage's (docs/compatibility.md); guardkit's
additions (sub-agents, approval expiry, input digests, backend consumption) are marked as such.

Its reads, the backend's consume and the checks made on open are in ``guardkit._engine_reads``
(a base class); input checks in ``guardkit._engine_input``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from guardkit import limits
from guardkit._canonical import canonical_json, check_json_value, plain_json
from guardkit.decisions import (
    Action,
    AgentEntry,
    AgentStatus,
    Decision,
    Denial,
    DenyCode,
    Reason,
    Severity,
    describe_reason,
)
from guardkit.errors import (
    AgentExists,
    AlreadyTerminated,
    InvalidInput,
    InvalidState,
    LedgerTampered,
    PolicyError,
    UnknownAction,
)
from guardkit.policy import Policy, ToolRule, load_policy
from guardkit.store.base import Store, Transaction
from guardkit.store.chain import json_str
from guardkit.store.state import ALLOWED, SPAWN_TOOL, AgentState, OpenAction, status_name

__all__ = ["Engine", "SPAWN_TOOL", "DEFAULT_MAX_INPUT_BYTES"]

from guardkit._engine_input import (
    _AGENT_FAULT,
    _FAILURE,
    _HARMFUL,
    _SUCCESS,
    DEFAULT_MAX_INPUT_BYTES,
    _action_number,
    _check_agent_id,
    _check_outcome,
    _check_reason,
    _check_text,
    _check_tool,
    _has_ttl,
    _outcome_record,
    _severity,
)
from guardkit._engine_reads import EngineReads


class Engine(EngineReads):
    """The policy engine over a store. ``Guard`` and the server are its only callers."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Callable[[], float] = time.time,
        max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES,
    ) -> None:
        self.store = store
        self.clock = clock
        self.max_input_bytes = max_input_bytes
        #: Notified after every approval, rejection, withdrawal or termination, so waiters wake.
        self.decided = threading.Condition()
        self._listeners: set[Callable[[], None]] = set()

    @property
    def quarantined(self) -> dict[str, str]:
        """Agents whose ledger failed a check, with the reason (the store keeps them)."""
        return self.store.quarantined

    # -- agents --------------------------------------------------------------------------------

    def create_agent(
        self, agent_id: str, policy: Any, *, parent_id: str | None = None
    ) -> AgentStatus:
        _check_agent_id(agent_id)
        parsed = load_policy(policy)
        now = self.clock()
        with self.store.transaction() as tx:
            if tx.agent_exists(agent_id):
                raise AgentExists(f"agent {agent_id!r} already exists")
            signer = self.store.signer
            state = AgentState(
                agent_id=agent_id,
                policy=parsed,
                parent_id=parent_id,
                public_key=signer.public_key if signer else None,
            )
            tx.create(state, now)
            return self._status(tx, state)

    def spawn(self, parent_id: str, child_id: str, policy: Any, budget: int) -> AgentStatus:
        """Create a sub-agent whose policy only narrows the parent's, funded by the parent.

        The budget is charged to the parent at once (recorded in the parent's ledger as an
        allowed, completed ``guardkit.spawn`` action) and never comes back.
        """
        _check_agent_id(child_id)
        amount = limits.check_cost(budget)
        if amount is None:
            raise InvalidInput("spawn needs a budget")
        child_policy = load_policy(policy)
        now = self.clock()
        with self.store.transaction() as tx:
            parent = self._agent(tx, parent_id)
            if tx.agent_exists(child_id):
                raise AgentExists(f"agent {child_id!r} already exists")
            if not parent.alive:
                raise InvalidState(f"agent {parent_id!r} is terminated")
            problems = child_policy.narrowing_problems(parent.policy)
            if problems:
                raise PolicyError(problems)
            if amount > parent.remaining:
                raise InvalidState(
                    f"budget {amount} exceeds the parent's remaining {parent.remaining}"
                )
            narrowed = Policy.from_dict({**child_policy.to_dict(), "budget": amount})
            spec = {"child_id": child_id, "budget": amount}
            number = self._new_action(
                tx, parent, SPAWN_TOOL, spec, canonical_json(spec), amount, now
            )
            self._allow(tx, parent, number, amount, now, approved_by="operator", note=None)
            tx.append(
                parent,
                "outcome",
                {
                    "action_id": f"act-{number}",
                    "status": "success",
                    "detail": f"spawned {child_id}",
                },
                now,
            )
            signer = self.store.signer
            child = AgentState(
                agent_id=child_id,
                policy=narrowed,
                parent_id=parent_id,
                public_key=signer.public_key if signer else None,
            )
            tx.create(child, now)
            return self._status(tx, child)

    def agents(self) -> list[AgentEntry]:
        with self.store.transaction(write=False) as tx:
            out: list[AgentEntry] = []
            for agent_id in tx.agent_ids():
                try:
                    status = self._status(tx, self._agent(tx, agent_id))
                except LedgerTampered as exc:
                    out.append({"agent_id": agent_id, "state": "quarantined", "error": exc.message})
                else:
                    out.append({"agent_id": agent_id, "state": "active", "status": status})
            return out

    def status(self, agent_id: str) -> AgentStatus:
        with self.store.transaction(write=False) as tx:
            return self._status(tx, self._agent(tx, agent_id))

    # -- the request pipeline ------------------------------------------------------------------

    def request(
        self,
        agent_id: str,
        tool: str,
        input: Any = None,
        cost: Any = None,
        *,
        approval_reason: Reason | None = None,
    ) -> Decision:
        """Record and decide one request (Lineage §5). Never raises for a denial.

        ``approval_reason`` (guardkit's addition) sends this one call to a human even when the
        tool's rule does not require approval, as a local check asks (``untrusted_provenance``):
        the ``approval_required`` record carries the reason, so the approver sees why.
        """
        # The hot path: helpers that other operations call are spelt out here.
        if (
            type(tool) is not str
            or not 1 <= len(tool) <= 128
            or tool == SPAWN_TOOL
            or not tool.isascii()
        ):
            _check_tool(tool)
        declared = None if cost is None else limits.check_cost(cost)
        if approval_reason is not None:
            _check_reason(approval_reason, "an approval reason")
            self._input_json(approval_reason)
        value = {} if input is None else input
        input_json = self._input_json(value)
        now = self.clock()
        with self.store.transaction() as tx:
            state = tx.agent(agent_id) if type(agent_id) is str else self._agent(tx, agent_id)
            if state.actions_pending:
                self._expire(tx, state, now)
            if state.parent_id is not None:
                self._follow_ancestors(tx, state, now)
            rule = state.policy.rule_for(tool)
            amount = limits.charge(rule, declared)
            number = self._new_action(tx, state, tool, value, input_json, amount, now)
            # guardkit: the tool's input_schema and rules (guardkit.rules), after the terminated
            # and tool_not_allowed checks, before its caps, rate limit and budget.
            conditions = None if rule is None else rule.conditions
            verdict = (
                conditions.judge(tool, value) if conditions is not None and state.alive else None
            )
            denial = self._checks(tx, state, tool, amount, now, rule=rule, unlisted=rule is None)
            if verdict is not None and verdict.denial is not None:
                denial = verdict.denial
            if denial is not None:
                return self._deny(tx, state, number, denial, now)
            assert rule is not None
            if approval_reason is None and verdict is not None:
                approval_reason = verdict.approval
            if rule.requires_approval or approval_reason is not None:
                action_id = f"act-{number}"
                payload: dict[str, object] = {"action_id": action_id}
                if approval_reason is not None:
                    payload["reason"] = approval_reason
                tx.append(state, "approval_required", payload, now, action=number)
                return Decision(decision="pending_approval", action_id=action_id)
            matched = None if verdict is None else verdict.rule
            return self._allow(
                tx, state, number, amount, now, approved_by=None, note=None, rule=matched
            )

    def deny(
        self,
        agent_id: str,
        tool: str,
        input: Any,
        reason: Reason,
        severity: Severity | None = None,
    ) -> Decision:
        """Record a denial decided outside the engine (a tool decorator's local check).

        Appends ``action_requested`` and ``action_denied`` (and a scar of ``severity``) exactly
        as the engine's own denials do, so no denial is invisible to operators. ``reason`` needs
        a string ``code``; a terminated agent is denied with ``terminated`` instead, as any
        request would be.
        """
        _check_tool(tool)
        _check_reason(reason, "a denial reason")
        self._input_json(reason)
        value = {} if input is None else input
        input_json = self._input_json(value)
        now = self.clock()
        with self.store.transaction() as tx:
            state = self._agent(tx, agent_id)
            self._expire(tx, state, now)
            self._follow_ancestors(tx, state, now)
            amount = limits.charge(state.policy.rule_for(tool), None)
            number = self._new_action(tx, state, tool, value, input_json, amount, now)
            denial: Denial | None = Denial(reason=reason, severity=severity)
            if not state.alive:
                # The first of the engine's checks, which answers ``terminated``.
                denial = self._checks(tx, state, tool, amount, now)
            assert denial is not None
            return self._deny(tx, state, number, denial, now)

    def _input_json(self, value: Any) -> str:
        if not plain_json(value):  # check_json_value's own fast test, without its call
            problem = check_json_value(value)
            if problem is not None:
                raise InvalidInput(problem)
        text = canonical_json(value)
        if len(text) > self.max_input_bytes and len(text.encode()) > self.max_input_bytes:
            raise InvalidInput(f"input is larger than the limit of {self.max_input_bytes} bytes")
        return text

    def _new_action(
        self,
        tx: Transaction,
        state: AgentState,
        tool: str,
        value: Any,
        input_json: str,
        amount: int,
        now: float,
    ) -> int:
        number = state.next_action + 1
        action_id = f"act-{number}"
        # Splice the input's canonical text into the payload (keys in sorted order) instead of
        # encoding it twice.
        text = (
            f'{{"action_id":"{action_id}","cost":{amount},"input":{input_json},'
            f'"tool":{json_str(tool)}}}'
        )
        payload = {"action_id": action_id, "cost": amount, "input": value, "tool": tool}
        tx.append(
            state,
            "action_requested",
            payload,
            now,
            payload_json=text,
            action=number,
        )
        return number

    def _checks(
        self,
        tx: Transaction,
        state: AgentState,
        tool: str,
        amount: int,
        now: float,
        *,
        rule: ToolRule | None = None,
        unlisted: bool = False,
    ) -> Denial | None:
        if not state.alive:
            return Denial(
                reason={"code": DenyCode.TERMINATED.value, "reason": state.termination_reason},
                severity=None,
            )
        if unlisted:
            return Denial(
                reason={"code": DenyCode.TOOL_NOT_ALLOWED.value, "tool": tool},
                severity=Severity.MODERATE,
            )
        if rule is None:
            rule = state.policy.rule_for(tool)
            assert rule is not None
        limit = state.policy.rate_limit
        verdict = None
        if limit is not None or rule.max_calls is not None:  # most tools have neither
            in_window = (
                limits.allowed_in_window(state.recent_allowed, now, limit.window_secs)
                if limit is not None
                else None
            )
            verdict = limits.cap_and_rate_check(
                state.policy, tool, rule, state.tool_counts.get(tool, 0), in_window
            )
        if verdict is None and amount <= state.policy.budget - state.spent:
            return None
        return verdict or limits.budget_check(amount, state.remaining)

    def _deny(
        self,
        tx: Transaction,
        state: AgentState,
        number: int,
        denial: Denial,
        now: float,
    ) -> Decision:
        reason, severity = denial.reason, denial.severity
        action_id = f"act-{number}"
        tx.append(
            state, "action_denied", {"action_id": action_id, "reason": reason}, now, action=number
        )
        if severity is not None:
            self._scar(tx, state, severity, describe_reason(reason), action_id, now)
        return Decision(decision="denied", action_id=action_id, reason=reason)

    def _allow(
        self,
        tx: Transaction,
        state: AgentState,
        number: int,
        amount: int,
        now: float,
        *,
        approved_by: str | None,
        note: str | None,
        rule: int | None = None,
    ) -> Decision:
        action_id = f"act-{number}"
        payload: dict[str, object] = {"action_id": action_id, "approved_by": approved_by}
        if note is not None:
            payload["note"] = note
        if rule is not None:
            payload["rule"] = rule  # guardkit: the allow rule that matched
        text = (
            f'{{"action_id":"{action_id}","approved_by":null}}'
            if approved_by is None and note is None and rule is None
            else None
        )
        tx.append(state, "action_allowed", payload, now, payload_json=text, action=number)
        remaining = state.policy.budget - state.spent
        if remaining == 0 and state.alive:
            # Lineage terminates on exactly 0 after any allow, even a free call on budget 0.
            self._terminate(tx, state, "budget exhausted", "guard", now)
        return Decision(decision="allowed", action_id=action_id, cost=amount, remaining=remaining)

    # -- approvals -----------------------------------------------------------------------------

    def approve(
        self, agent_id: str, action_id: str, approver: str, note: str | None = None
    ) -> Decision:
        """Approve a pending action; every check runs again (it may have waited for hours)."""
        _check_text(approver, "approver")
        number = _action_number(action_id)
        now = self.clock()
        with self.store.transaction() as tx:
            state = self._agent(tx, agent_id)
            found = self._pending(tx, state, number, action_id, self._expire(tx, state, now))
            if isinstance(found, Decision):
                decision = found
            else:
                denial = self._checks(tx, state, found.tool, found.cost, now)
                decision = (
                    self._deny(tx, state, number, denial, now)
                    if denial is not None
                    else self._allow(
                        tx, state, number, found.cost, now, approved_by=approver, note=note
                    )
                )
        self._notify()
        return decision

    def reject(
        self, agent_id: str, action_id: str, approver: str, reason: str, scar: str | None = None
    ) -> Decision:
        _check_text(approver, "approver")
        _check_text(reason, "reason")
        severity = _severity(scar) if scar is not None else None
        number = _action_number(action_id)
        now = self.clock()
        with self.store.transaction() as tx:
            state = self._agent(tx, agent_id)
            found = self._pending(tx, state, number, action_id, self._expire(tx, state, now))
            if isinstance(found, Decision):
                decision = found
            else:
                tx.append(
                    state,
                    "action_rejected",
                    {"action_id": action_id, "by": approver, "reason": reason},
                    now,
                    action=number,
                )
                rejected: Reason = {
                    "code": DenyCode.REJECTED.value,
                    "by": approver,
                    "reason": reason,
                }
                if severity is not None:
                    self._scar(tx, state, severity, describe_reason(rejected), action_id, now)
                decision = Decision(decision="denied", action_id=action_id, reason=rejected)
        self._notify()
        return decision

    def withdraw(self, agent_id: str, action_id: str, timeout: float) -> Action:
        """The agent stops waiting for a human: its pending action is denied, without a scar.

        guardkit's addition, so a wait that timed out leaves the action in a final state
        (``denied`` with ``approval_timeout``) instead of ``pending_approval`` forever. An action
        a human decided meanwhile keeps that decision. Returns the action as it now stands.
        """
        number = _action_number(action_id)
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout < 0:
            raise InvalidInput("timeout must be a number of seconds >= 0")
        now = self.clock()
        with self.store.transaction() as tx:
            state = self._agent(tx, agent_id)
            self._expire(tx, state, now)
            waiting = state.open.get(number)
            if waiting is not None and waiting.pending:
                reason: Reason = {
                    "code": DenyCode.APPROVAL_TIMEOUT.value,
                    "timeout": int(timeout) if float(timeout).is_integer() else timeout,
                }
                self._deny(tx, state, number, Denial(reason=reason, severity=None), now)
            row = tx.get_action(agent_id, number)
            if row is None:
                raise UnknownAction(f"unknown action {action_id!r}")
            action = row.to_dict()
        self._notify()
        return action

    def _pending(
        self,
        tx: Transaction,
        state: AgentState,
        number: int,
        action_id: str,
        expired: dict[int, Decision],
    ) -> OpenAction | Decision:
        """The pending action, or the denial it got by expiring just now; raises otherwise."""
        if number in expired:
            return expired[number]
        waiting = state.open.get(number)
        if waiting is not None and waiting.pending:
            return waiting
        row = tx.get_action(state.agent_id, number)
        if row is None:
            raise UnknownAction(f"unknown action {action_id!r}")
        raise InvalidState(f"action {action_id} is {row.status}, not pending_approval")

    def _expire(self, tx: Transaction, state: AgentState, now: float) -> dict[int, Decision]:
        """Deny pending actions older than their ``approval_ttl`` (guardkit's addition)."""
        expired: dict[int, Decision] = {}
        if not state.actions_pending or not _has_ttl(state.policy):
            return expired
        waiting = sorted((n, a) for n, a in state.open.items() if a.pending)
        for number, action in waiting:
            ttl = state.policy.ttl_for(action.tool)
            if ttl is not None and now - action.requested_at >= ttl:
                reason: Reason = {
                    "code": DenyCode.APPROVAL_EXPIRED.value,
                    "ttl": int(ttl) if float(ttl).is_integer() else ttl,
                }
                expired[number] = self._deny(
                    tx, state, number, Denial(reason=reason, severity=None), now
                )
        return expired

    # -- outcomes, scars, termination ------------------------------------------------------------

    def report(
        self,
        agent_id: str,
        action_id: str,
        status: str,
        detail: str = "",
        *,
        operator: bool = True,
        fault: str = _AGENT_FAULT,
    ) -> AgentStatus:
        """Record the one outcome of an allowed action; ``harmful`` only from an operator.

        A ``failure`` scars the agent (minor) unless ``fault`` says it was not the agent's: the
        service that runs the tool failed (``upstream``) or the caller cancelled (``caller``).
        The ledger's outcome record says whose fault it was.
        """
        if detail != "" or status != _SUCCESS or fault != _AGENT_FAULT:  # most reports: no call
            detail = _check_outcome(status, detail, fault, operator)
        number = _action_number(action_id)
        now = self.clock()
        with self.store.transaction() as tx:
            state = tx.agent(agent_id) if type(agent_id) is str else self._agent(tx, agent_id)
            statuses = state.statuses
            if not 0 < number < len(statuses):
                raise UnknownAction(f"unknown action {action_id!r}")
            if statuses[number] & 7 != ALLOWED:
                current = status_name(statuses[number])
                raise InvalidState(f"action {action_id} is {current}, not allowed")
            payload, payload_json = _outcome_record(action_id, status, detail, fault)
            tx.append(state, "outcome", payload, now, payload_json=payload_json, action=number)
            if status == _FAILURE and fault == _AGENT_FAULT:
                self._scar(tx, state, Severity.MINOR, f"action failed: {detail}", action_id, now)
            elif status == _HARMFUL:
                self._scar(
                    tx, state, Severity.SEVERE, f"action caused harm: {detail}", action_id, now
                )
            return self._status(tx, state)

    def scar(
        self, agent_id: str, severity: str, reason: str, action_id: str | None = None
    ) -> AgentStatus:
        """An operator's or monitor's scar, for what the guard itself can't see."""
        level = _severity(severity)
        _check_text(reason, "reason")
        now = self.clock()
        with self.store.transaction() as tx:
            state = self._agent(tx, agent_id)
            if action_id is not None and not 1 <= _action_number(action_id) <= state.next_action:
                raise UnknownAction(f"unknown action {action_id!r}")
            self._scar(tx, state, level, reason, action_id, now)
            return self._status(tx, state)

    def terminate(self, agent_id: str, reason: str, by: str) -> AgentStatus:
        _check_text(reason, "reason")
        _check_text(by, "by")
        now = self.clock()
        with self.store.transaction() as tx:
            state = self._agent(tx, agent_id)
            if not state.alive:
                raise AlreadyTerminated(f"agent {agent_id!r} is already terminated")
            self._terminate(tx, state, reason, by, now)
            status = self._status(tx, state)
        self._notify()
        return status

    def _scar(
        self,
        tx: Transaction,
        state: AgentState,
        severity: Severity,
        reason: str,
        action_id: str | None,
        now: float,
    ) -> None:
        tx.append(
            state,
            "scar",
            {"severity": severity.value, "reason": reason, "action_id": action_id},
            now,
        )
        if state.alive and state.scar_score >= state.policy.scar_limit:
            self._terminate(
                tx,
                state,
                f"scar limit reached ({state.scar_score} >= {state.policy.scar_limit})",
                "guard",
                now,
            )
        if severity in (Severity.SEVERE, Severity.FATAL) and state.parent_id is not None:
            # guardkit: a sub-agent's severe scar also scars its parent, moderately.
            parent = tx.agent(state.parent_id)
            self._scar(
                tx, parent, Severity.MODERATE, f"sub-agent {state.agent_id}: {reason}", None, now
            )

    def _terminate(
        self, tx: Transaction, state: AgentState, reason: str, by: str, now: float
    ) -> None:
        tx.append(state, "terminated", {"reason": reason, "by": by}, now)
        for child_id in list(state.children):
            child = tx.agent(child_id)
            if child.alive:
                self._terminate(
                    tx, child, f"parent {state.agent_id} terminated: {reason}", "guard", now
                )

    def _follow_ancestors(self, tx: Transaction, state: AgentState, now: float) -> None:
        """A sub-agent can never outlive its parent, even if a cascade was interrupted."""
        parent_id = state.parent_id
        while state.alive and parent_id is not None:
            parent = tx.agent(parent_id)
            if not parent.alive:
                self._terminate(
                    tx,
                    state,
                    f"parent {parent_id} terminated: {parent.termination_reason}",
                    "guard",
                    now,
                )
            parent_id = parent.parent_id

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (from the deciding thread) after every decision a waiter awaits.

        Returns the function that stops it. ``LocalAgent.await_for_approval`` wakes its event
        loop this way instead of holding a thread for the whole wait.
        """
        with self.decided:
            self._listeners.add(callback)

        def stop() -> None:
            with self.decided:
                self._listeners.discard(callback)

        return stop

    def _notify(self) -> None:
        with self.decided:
            self.decided.notify_all()
            listeners = list(self._listeners)
        for callback in listeners:
            callback()
