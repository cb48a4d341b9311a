"""The per-call pipeline of a guarded tool, as small named steps the wrappers compose.

``prepare`` → ``claim`` → ``request`` → ``wait`` → run (``fenced``) → ``succeeded``/``failed``.
Every step that refuses the call raises before the tool body runs; every refusal is in the ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

from guardkit import tracing
from guardkit._binding import CallShape, bind_call, jsonable
from guardkit.checks._base import Denial
from guardkit.checks.labels import label_arguments
from guardkit.checks.local import CheckSet
from guardkit.checks.policy import PolicyChecks
from guardkit.checks.runtime import Fence, enforcing
from guardkit.errors import ApprovalTimeout, GuardError, ToolDenied, describe_reason
from guardkit.idempotency import Claim, Idempotency, Replay
from guardkit.protocols import AgentGuard
from guardkit.provenance import current_provenance
from guardkit.store.base import Store

__all__ = ["LOCAL_DENIAL_TOOL", "Call", "Steps"]

#: What an agent guard without ``deny_local`` (not ``LocalAgent`` or ``AgentClient``) is asked, so a
#: local denial still lands in its ledger: an unlisted tool, denied and scarred by the guard.
LOCAL_DENIAL_TOOL = "guardkit.local_denial"
_DETAIL_MAX = 2000


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


@dataclass(slots=True, kw_only=True)
class Steps:
    """Everything fixed at decoration time, and the steps that use it."""

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

    def span(self) -> AbstractContextManager[Any]:
        """The ``execute_tool`` span of one call (a shared no-op while tracing is off)."""
        return tracing.tool_span(self.name, agent_id=getattr(self.guard, "agent_id", None))

    @property
    def claim_may_wait(self) -> bool:
        return self.idempotency is not None and self.idempotency.wait > 0

    # -- prepare: bind, check, label ------------------------------------------------------------

    def prepare(self, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Call:
        agent = self.guard if self.guard is not None else self.resolve_agent()
        raw = bind_call(self.shape, instance, args, kwargs)
        arguments = {key: jsonable(value) for key, value in raw.items()}
        checks = self._policy.for_agent(agent)
        record: dict[str, Any] = {}
        denial = checks.run(raw, record) or label_arguments(checks, arguments, record)
        tool_input = {**arguments, "_guardkit": record} if record else dict(arguments)
        if denial is not None:
            self._deny(agent, tool_input, denial)
        cost = self.cost(raw) if callable(self.cost) else self.cost
        fence = checks.fence(self.name)
        return Call(
            agent=agent,
            raw=raw,
            arguments=arguments,
            input=tool_input,
            checks=checks,
            cost=cost,
            fence=None if fence is None else replace(fence, blocked=[]),
        )

    def _deny(self, agent: AgentGuard, tool_input: dict[str, Any], denial: Denial) -> NoReturn:
        deny_local = getattr(agent, "deny_local", None)
        check = _CHECKS.get(str(denial.reason.get("code")))
        if callable(deny_local):
            decision = deny_local(self.name, tool_input, denial.reason, denial.severity)
            tracing.current_tool().decision(decision, check=check, agent_id=_agent_id(agent))
            raise ToolDenied(
                decision.get("action_id"), dict(decision.get("reason") or denial.reason)
            )
        decision = agent.request(
            LOCAL_DENIAL_TOOL, {"tool": self.name, "input": tool_input, "reason": denial.reason}
        )
        action_id = str(decision["action_id"])
        if decision["decision"] == "allowed":
            agent.report(action_id, "failure", describe_reason(denial.reason))
        denied = {"decision": "denied", "action_id": action_id, "reason": denial.reason}
        tracing.current_tool().decision(denied, check=check, agent_id=_agent_id(agent))
        raise ToolDenied(action_id, denial.reason)

    # -- claim: idempotency ---------------------------------------------------------------------

    def claim(self, call: Call) -> Replay | None:
        """Take the call's idempotency key, or return the stored result of a completed one."""
        rule = self.idempotency
        if rule is None:
            return None
        store = rule.store or _store_of(call.agent)
        key = rule.derive_key(self.name, call.arguments)
        agent_id = getattr(call.agent, "agent_id", None)
        got = Claim.acquire(store, rule, key, call.arguments, agent_id)
        if isinstance(got, Claim):
            call.claim = got
            return None
        deny_local = getattr(call.agent, "deny_local", None)
        if callable(deny_local):
            # Recorded as a request answered without running or charging anything; a guard
            # that answers otherwise (a terminated agent) gets no result either.
            replay = {
                "code": "idempotent_replay",
                "of": got.action_id,
                "key": key,
                "message": f"replayed the result of {got.action_id}",
            }
            tracing.current_tool().replay(got.action_id)
            decision = deny_local(self.name, call.input, replay, None)
            reason = dict(decision.get("reason") or {})
            if reason.get("code") != replay["code"]:
                raise ToolDenied(decision.get("action_id"), reason)
        return got

    # -- request and wait -----------------------------------------------------------------------

    def request(self, call: Call) -> bool:
        """Ask the guard; True when a human must approve first. Raises ``ToolDenied``."""
        try:
            decision = call.agent.request(self.name, call.input, call.cost)
            call.action_id = str(decision["action_id"])
            tracing.current_tool().decision(decision, agent_id=_agent_id(call.agent))
            if decision["decision"] == "pending_approval":
                if not self.wait_for_approval:
                    raise ToolDenied(call.action_id, {"code": "pending_approval"})
                return True
            if decision["decision"] != "allowed":
                raise ToolDenied(call.action_id, dict(decision.get("reason") or {"code": "denied"}))
        except BaseException:
            self._release(call)
            raise
        return False

    def wait(self, call: Call) -> None:
        """Wait for a human; a timeout is a denial with ``approval_timeout``."""
        assert call.action_id is not None
        try:
            span = tracing.current_tool()
            try:
                with span.approval_wait(call.action_id, self.approval_timeout) as waiting:
                    final = call.agent.wait_for_approval(
                        call.action_id, self.approval_timeout, self.poll
                    )
                    waiting.status(final)
            except ApprovalTimeout:
                raise ToolDenied(
                    call.action_id, {"code": "approval_timeout", "timeout": self.approval_timeout}
                ) from None
            if final != "allowed":
                reason = call.agent.action(call.action_id).get("reason")
                raise ToolDenied(call.action_id, dict(reason or {"code": "rejected"}))
        except BaseException:
            self._release(call)
            raise

    # -- run and report -------------------------------------------------------------------------

    def fenced(self, call: Call) -> AbstractContextManager[Fence | None]:
        return enforcing(call.fence)

    def run(
        self,
        call: Call,
        wrapped: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
    ) -> Any:
        try:
            with enforcing(call.fence):
                result = wrapped(*args, **kwargs)
        except BaseException as exc:
            self.failed(call, exc)
            raise
        self.succeeded(call, result)
        return result

    def succeeded(self, call: Call, result: Any, detail: str = "") -> None:
        """Store an idempotent result, report, and add the result to the run's provenance."""
        assert call.action_id is not None
        if call.claim is not None:
            try:
                text = call.claim.result_json(result)
            except TypeError:
                call.claim.release()
                self._report(call, "success", detail)
                raise
            call.claim.complete(text, call.action_id)
        blocked = call.fence.blocked if call.fence is not None else []
        if blocked:
            why = "blocked by guardkit: " + "; ".join(blocked)
            tracing.current_tool().fail("PermissionError", why)
            self._report(call, "failure", f"PermissionError: {why}")
        else:
            self._report(call, "success", detail)
            tracing.current_tool().result(result)
        provenance = current_provenance()
        if provenance is not None and result is not None:
            provenance.add_result(
                self.name,
                call.action_id,
                jsonable(result),
                trusted=bool(call.checks.output_trusted),
            )

    def failed(self, call: Call, exc: BaseException) -> None:
        """Release the idempotency key and report ``failure`` with ``"ExcType: message"``."""
        self._release(call)
        try:
            self._report(call, "failure", f"{type(exc).__name__}: {exc}")
        except GuardError as report_error:
            exc.add_note(f"guardkit could not report the failure: {report_error}")

    def _report(self, call: Call, status: str, detail: str) -> None:
        assert call.action_id is not None
        call.agent.report(call.action_id, status, detail[:_DETAIL_MAX])

    def _release(self, call: Call) -> None:
        if call.claim is not None:
            call.claim.release()
            call.claim = None


def _store_of(agent: AgentGuard) -> Store:
    store = getattr(getattr(agent, "guard", None), "store", None)
    if not isinstance(store, Store):
        raise TypeError(
            f"idempotency needs a store for its records and {agent!r} has none (an agent over "
            "HTTP): pass Idempotency(store=guardkit.store.open_store('idem.db'))"
        )
    return store


#: The ``guardkit.check`` span attribute for each local denial code.
_CHECKS = {
    "path_denied": "paths",
    "egress_denied": "egress",
    "untrusted_provenance": "provenance",
}


def _agent_id(agent: AgentGuard) -> str | None:
    agent_id = getattr(agent, "agent_id", None)
    return agent_id if isinstance(agent_id, str) else None
