"""The per-call pipeline of a guarded tool, as small named steps the wrappers compose.

``prepare`` → ``claim`` → ``ask`` (request, and wait for a human) → run (``fenced``) →
``succeeded``/``failed``. Every step that refuses the call raises before the tool body runs;
every refusal is in the ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any

from guardkit import tracing
from guardkit.checks.checkset import CheckSet
from guardkit.checks.runtime import Fence, enforcing
from guardkit.decisions import (
    REPLAY_CODE,
    DecisionDict,
    DecisionName,
    Reason,
)
from guardkit.errors import GuardError, ToolDenied
from guardkit.idempotency import Claim, Idempotency, Replay
from guardkit.protocols import (
    AgentGuard,
    IdempotencyStore,
    KeepsIdempotency,
    RecordsLocalDenials,
)
from guardkit.provenance import current_provenance
from guardkit.tools.asking import settle
from guardkit.tools.binding import CallShape, bind_call, jsonable
from guardkit.tools.enforce import LOCAL_DENIAL_TOOL, checked
from guardkit.tools.flow import Flow, Op
from guardkit.tools.handoff import Handoff, running
from guardkit.tools.outcome import report
from guardkit.tools.policy_checks import PolicyChecks

__all__ = ["IDEMPOTENT_REPLAY", "LOCAL_DENIAL_TOOL", "Call", "Steps"]

#: The reason code of a call answered from its idempotency record: recorded, nothing charged.
IDEMPOTENT_REPLAY = REPLAY_CODE


@dataclass(slots=True, kw_only=True)
class Call:
    """One call on its way through the steps."""

    agent: AgentGuard
    #: Bound arguments as given, and as recorded (JSON).
    raw: dict[str, Any]
    arguments: dict[str, Any]
    input: dict[str, Any]
    checks: CheckSet
    cost: Any = None
    claim: Claim | None = None
    action_id: str | None = None
    fence: Fence | None = None
    #: The caller's tool call this call took over (``guardkit.tools.handoff``), if any.
    handed: Handoff | None = None
    #: Why a local check wants a human to decide this one call (``AsksApproval``), if it does.
    approval_reason: Reason | None = None


@dataclass(slots=True, kw_only=True)
class Steps:
    """Everything fixed at decoration time, and the steps that use it.

    The steps that talk to the guard are flows (``guardkit.tools.flow``): the wrappers drive
    them with the agent's blocking calls, or its ``async`` ones for ``async`` tools.
    """

    name: str
    guard: AgentGuard | None
    cost: Any
    wait_for_approval: bool
    approval_timeout: float
    poll: float
    shape: CallShape
    checks: CheckSet
    idempotency: Idempotency | None
    resolve_agent: Callable[[], AgentGuard]
    _policy: PolicyChecks = field(init=False)

    def __post_init__(self) -> None:
        self._policy = PolicyChecks(self.name, self.checks, self.shape.full.parameters)

    def agent(self, handed: Handoff | None) -> AgentGuard:
        """The agent to ask: the decorator's, the caller's (a handoff), else the current one."""
        if self.guard is not None:
            return self.guard
        if handed is not None and handed.agent is not None:
            return handed.agent
        return self.resolve_agent()

    def span(self, agent: AgentGuard, handed: Handoff | None) -> AbstractContextManager[Any]:
        """The ``execute_tool`` span of one call (a shared no-op while tracing is off)."""
        call_id = None if handed is None else handed.call_id
        return tracing.tool_span(self.name, agent_id=agent.agent_id, call_id=call_id)

    # -- prepare: bind, check, label ------------------------------------------------------------

    def prepare(
        self,
        agent: AgentGuard,
        handed: Handoff | None,
        instance: Any,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
    ) -> Flow[Call]:
        """Bind, run the local checks (a refusal is recorded and raised), work out the cost."""
        raw = bind_call(self.shape, instance, args, kwargs)
        arguments = {key: jsonable(value) for key, value in raw.items()}
        found = yield from checked(agent, self.name, raw, arguments, checks=self._policy)
        checks, tool_input, approval = found.checks, found.input, found.approval
        if callable(self.cost):
            cost = self.cost(raw)
        else:
            cost = self.cost if self.cost is not None or handed is None else handed.cost
        fence = checks.fence(self.name)
        return Call(
            agent=agent,
            raw=raw,
            arguments=arguments,
            input=tool_input,
            checks=checks,
            cost=cost,
            fence=None if fence is None else replace(fence, blocked=[]),
            handed=handed,
            approval_reason=approval,
        )

    # -- claim: idempotency ---------------------------------------------------------------------

    def claim(self, call: Call) -> Flow[Replay | None]:
        """Take the call's idempotency key, or return the stored result of a completed one."""
        rule = self.idempotency
        if rule is None:
            return None
        store = rule.store or _store_of(call.agent)
        key = rule.derive_key(self.name, call.arguments)
        got: Claim | Replay = yield Op(
            "call", (store, rule, key, call.arguments, call.agent.agent_id), Claim.acquire
        )
        if isinstance(got, Claim):
            call.claim = got
            return None
        if isinstance(call.agent, RecordsLocalDenials):
            # Recorded as a request answered without running or charging anything; a guard
            # that answers otherwise (a terminated agent) gets no result either.
            replay: Reason = {
                "code": IDEMPOTENT_REPLAY,
                "key": key,
                "message": f"replayed the result of {got.action_id}",
            }
            if got.action_id is not None:
                replay["of"] = got.action_id
            tracing.current_tool().replay(got.action_id)
            decision: DecisionDict = yield Op("deny_local", (self.name, call.input, replay, None))
            reason = decision.get("reason") or {"code": decision["decision"]}
            if reason["code"] != IDEMPOTENT_REPLAY:
                raise ToolDenied(decision["action_id"], reason)
        return got

    # -- request and wait -----------------------------------------------------------------------

    def ask(self, call: Call) -> Flow[None]:
        """Request, and wait for a human if the guard says so. Raises ``ToolDenied``."""
        try:
            decision: DecisionDict = (
                (yield Op("request", (self.name, call.input, call.cost)))
                if call.approval_reason is None
                else (
                    yield Op(
                        "request_approval",
                        (self.name, call.input, call.cost, call.approval_reason),
                    )
                )
            )
            call.action_id = decision["action_id"]
            self._tell(call, decision["decision"])
            tracing.current_tool().decision(decision, agent_id=call.agent.agent_id)
            if decision["decision"] == "pending_approval" and not self.wait_for_approval:
                raise ToolDenied(call.action_id, {"code": "pending_approval"})
            decision = yield from settle(
                call.agent, decision, approval_timeout=self.approval_timeout, poll=self.poll
            )
            self._tell(call, decision["decision"])
            if decision["decision"] != "allowed":
                raise ToolDenied(call.action_id, decision.get("reason") or {"code": "denied"})
        except BaseException:
            yield from self._release(call)
            raise

    @staticmethod
    def _tell(call: Call, decision: DecisionName) -> None:
        if call.handed is not None:
            call.handed.action_id = call.action_id
            call.handed.decision = decision

    # -- run and report -------------------------------------------------------------------------

    def fenced(self, call: Call) -> AbstractContextManager[Fence | None]:
        """Around the body: the runtime fence, and ``current_action_id()`` for backends."""
        assert call.action_id is not None
        return _Running(call.fence, call.action_id)

    def succeeded(self, call: Call, result: Any, detail: str = "") -> Flow[None]:
        """Store an idempotent result, report, and add the result to the run's provenance."""
        assert call.action_id is not None
        if call.claim is not None:
            try:
                text = call.claim.result_json(result)
            except TypeError:
                yield from self._release(call)
                yield from self._report(call, "success", detail)
                raise
            yield Op("call", (text, call.action_id), call.claim.complete)
        blocked = call.fence.blocked if call.fence is not None else []
        if blocked:
            why = "blocked by guardkit: " + "; ".join(blocked)
            tracing.current_tool().fail("PermissionError", why)
            yield from self._report(call, "failure", f"PermissionError: {why}")
        else:
            yield from self._report(call, "success", detail)
            tracing.current_tool().result(result)
        provenance = current_provenance()
        if provenance is not None and result is not None:
            provenance.add_result(
                self.name,
                call.action_id,
                jsonable(result),
                trusted=bool(call.checks.output_trusted),
            )

    def failed(self, call: Call, exc: BaseException) -> Flow[None]:
        """Release the idempotency key and report ``failure`` with ``"ExcType: message"``."""
        yield from self._release(call)
        try:
            yield from self._report(call, "failure", f"{type(exc).__name__}: {exc}")
        except GuardError as report_error:
            exc.add_note(f"guardkit could not report the failure: {report_error}")

    def _report(self, call: Call, status: str, detail: str) -> Flow[None]:
        assert call.action_id is not None
        yield from report(call.action_id, status, detail)

    def _release(self, call: Call) -> Flow[None]:
        if call.claim is not None:
            claim, call.claim = call.claim, None
            yield Op("call", (), claim.release)


class _Running:
    """The runtime fence and the running action id, entered and left around each body step."""

    __slots__ = ("_action_id", "_fence", "_fencing", "_running")

    def __init__(self, fence: Fence | None, action_id: str) -> None:
        self._fence = fence
        self._action_id = action_id

    def __enter__(self) -> Fence | None:
        self._running = running(self._action_id)
        self._running.__enter__()
        self._fencing = enforcing(self._fence)
        return self._fencing.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self._fencing.__exit__(*exc)
        self._running.__exit__(*exc)


def _store_of(agent: AgentGuard) -> IdempotencyStore:
    if not isinstance(agent, KeepsIdempotency):
        raise TypeError(
            f"idempotency needs a store for its records and {agent!r} has none (an agent over "
            "HTTP): pass Idempotency(store=guardkit.store.open_store('idem.db'))"
        )
    return agent.idempotency_store
