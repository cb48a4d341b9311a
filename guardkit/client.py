"""HTTP clients for the guard server, with Lineage's method names and signatures (§13).

``AgentClient`` is one agent's guard over HTTP (it satisfies ``guardkit.AgentGuard``, like
``LocalAgent``); ``AdminClient`` is the operator's; ``BackendClient`` is what a tool backend
(a bank, a deploy system) uses to read an action and ``consume`` it once. All three keep one
httpx connection pool alive, raise ``GuardError(status, code, message)`` (or its subclass for the
code) for an HTTP error, and ``GuardUnavailable`` when the server cannot be reached.

``AgentClient.request`` sends an ``Idempotency-Key`` and retries once on a lost connection, so a
request whose response never arrived is not decided (or charged) twice. Every ``AgentClient``
call has an ``async`` twin (``arequest``, ``areport``, ``astatus``, ``aaction``,
``await_for_approval``) over an ``httpx.AsyncClient`` made on first use in each event loop;
close it before the loop ends (``async with AgentClient(...) as agent:`` or ``await
agent.aclose()``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Generator
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar, cast
from urllib.parse import quote

import httpx

from guardkit import errors, tracing
from guardkit._agent_api import AgentConveniences, announce_wait, check_wait
from guardkit.decisions import (
    Action,
    ActionStatusName,
    AgentEntry,
    AgentStatus,
    ConsumedAction,
    DecisionDict,
    FaultName,
    LogPage,
    NewAgent,
    PendingItem,
    PublicKeyInfo,
    Reason,
    SeverityName,
    Verification,
)
from guardkit.errors import ApprovalTimeout, GuardError, GuardUnavailable
from guardkit.policy import Policy

__all__ = ["AdminClient", "AgentClient", "BackendClient"]

_BY_CODE: dict[str, type[Any]] = {
    cls.code: cls
    for cls in (
        errors.InvalidInput,
        errors.Forbidden,
        errors.NotFound,
        errors.UnknownAction,
        errors.AgentExists,
        errors.InvalidState,
        errors.AlreadyTerminated,
        errors.AlreadyConsumed,
        errors.ConsumeMismatch,
        errors.IdempotencyConflict,
        errors.IdempotencyInProgress,
        errors.LedgerTampered,
    )
}
#: The longest long-poll one HTTP call asks the server for.
_WAIT_CHUNK = 30.0


def _error(response: httpx.Response) -> GuardError:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        code, message = str(body.get("code") or "http_error"), str(body.get("error") or "")
    else:
        code, message = "http_error", response.text[:200] or response.reason_phrase
    if code == errors.TooManyWaits.code and response.status_code == 429:
        try:
            retry_after = float(response.headers.get("retry-after", "1"))
        except ValueError:
            retry_after = 1.0
        return errors.TooManyWaits(message, retry_after)
    cls = _BY_CODE.get(code)
    if cls is not None and cls.status == response.status_code:
        error: GuardError = cls(message)
        return error
    return GuardError(response.status_code, code, message)


def _seg(value: str) -> str:
    return quote(str(value), safe="")


class _Http:
    """One keep-alive connection pool to the server (and one more for async calls)."""

    def __init__(self, base_url: str, token: str, timeout: float = 30) -> None:
        self._base = base_url.rstrip("/")
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        self._client = httpx.Client(base_url=self._base, timeout=timeout, headers=self._headers)
        self._pool: tuple[asyncio.AbstractEventLoop, httpx.AsyncClient] | None = None

    @property
    def url(self) -> str:
        return self._base

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        """Close the async connection pool of the running event loop (call it before the loop
        ends, or use ``async with``); the blocking pool stays open until ``close``."""
        if self._pool is not None:
            loop, client = self._pool
            self._pool = None
            if loop is asyncio.get_running_loop():
                await client.aclose()

    def __enter__(self) -> Any:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
        self.close()

    def _unreachable(self, exc: httpx.TransportError) -> GuardUnavailable:
        return GuardUnavailable(
            f"the guard at {self._base} could not be reached; nothing was done "
            f"({type(exc).__name__}: {exc})"
        )

    def _answer(self, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise _error(response)
        return response.json()

    def _send(self, call: _Send) -> httpx.Response:
        try:
            response = self._client.request(
                call.method,
                call.path,
                json=call.json,
                params=call.params,
                headers=call.headers,
                timeout=self.timeout if call.timeout is None else call.timeout,
            )
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from exc
        if response.status_code >= 400:
            raise _error(response)
        return response

    def _call(self, method: str, path: str, **options: Any) -> Any:
        return self._send(_Send(method, path, **options)).json()

    def _async_client(self) -> httpx.AsyncClient:
        # An AsyncClient belongs to the event loop it first ran on: make one per loop.
        loop = asyncio.get_running_loop()
        if self._pool is None or self._pool[0] is not loop:
            self._pool = (
                loop,
                httpx.AsyncClient(base_url=self._base, timeout=self.timeout, headers=self._headers),
            )
        return self._pool[1]

    async def _asend(self, call: _Send) -> Any:
        try:
            response = await self._async_client().request(
                call.method,
                call.path,
                json=call.json,
                params=call.params,
                headers=call.headers,
                timeout=self.timeout if call.timeout is None else call.timeout,
            )
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from exc
        return self._answer(response)

    def _sync(self, steps: Exchange[T]) -> T:
        """Run an exchange with the blocking pool (a failed request is thrown back into it)."""
        step = _resume(steps, None, None)
        while not isinstance(step, _Done):
            if isinstance(step, float):
                time.sleep(step)
                step = _resume(steps, None, None)
                continue
            try:
                answer = self._send(step).json()
            except GuardError as exc:
                step = _resume(steps, None, exc)
            else:
                step = _resume(steps, answer, None)
        return cast(T, step.value)

    async def _async(self, steps: Exchange[T]) -> T:
        """Run an exchange from async code, with this event loop's pool."""
        step = _resume(steps, None, None)
        while not isinstance(step, _Done):
            if isinstance(step, float):
                await asyncio.sleep(step)
                step = _resume(steps, None, None)
                continue
            try:
                answer = await self._asend(step)
            except GuardError as exc:
                step = _resume(steps, None, exc)
            else:
                step = _resume(steps, answer, None)
        return cast(T, step.value)


@dataclass(frozen=True, slots=True)
class _Send:
    """One HTTP request to make."""

    method: str
    path: str
    json: Any = None
    params: Any = None
    headers: dict[str, str] | None = None
    timeout: float | None = None


@dataclass(frozen=True, slots=True)
class _Done:
    value: Any


T = TypeVar("T")
#: One conversation with the server, written once: it yields requests (answered with the JSON
#: body, or a GuardError thrown back) and pauses in seconds; ``_sync``/``_async`` drive it.
Exchange = Generator["_Send | float", Any, T]


def _resume(steps: Exchange[Any], answer: Any, error: GuardError | None) -> _Send | float | _Done:
    try:
        return steps.send(answer) if error is None else steps.throw(error)
    except StopIteration as stop:
        return _Done(stop.value)


def _one(call: _Send) -> Exchange[Any]:
    answer = yield call
    return answer


class AgentClient(_Http, AgentConveniences):
    """One agent's guard over HTTP: ``AgentClient(base_url, agent_id, token, timeout=30)``."""

    def __init__(
        self, base_url: str, agent_id: str, token: str, timeout: float = 30, *, retries: int = 1
    ) -> None:
        super().__init__(base_url, token, timeout)
        self.agent_id = agent_id
        self.retries = retries
        self._path = f"/v1/agents/{_seg(agent_id)}"
        self._policy: Policy | None = None

    def __repr__(self) -> str:
        return f"AgentClient({self.url!r}, {self.agent_id!r})"

    def _action_path(self, action_id: str) -> str:
        return f"{self._path}/actions/{_seg(action_id)}"

    # -- the exchanges, each written once --------------------------------------------------------

    def _request(
        self, tool: str, input: Any, cost: Any, key: str | None, approval: Reason | None = None
    ) -> Exchange[DecisionDict]:
        body: dict[str, object] = {"tool": tool, "input": {} if input is None else input}
        if cost is not None:
            body["cost"] = cost
        if approval is not None:
            body["approval_reason"] = approval
        key = key or (uuid.uuid4().hex if self.retries > 0 else None)
        headers = {"Idempotency-Key": key} if key else None
        for attempt in range(self.retries + 1):
            try:
                decision: DecisionDict = yield _Send(
                    "POST", self._path + "/actions", json=body, headers=headers
                )
            except GuardUnavailable:
                # The same Idempotency-Key: a request whose answer was lost is not decided twice.
                if attempt >= self.retries or key is None:
                    raise
                continue
            return decision
        raise AssertionError("unreachable")  # pragma: no cover

    def _report(
        self, action_id: str, status: str, detail: str, fault: FaultName
    ) -> Exchange[AgentStatus]:
        body = {"status": status, "detail": detail}
        if fault != "agent":  # a Lineage server reads the body without it
            body["fault"] = fault
        return _one(_Send("POST", self._action_path(action_id) + "/outcome", json=body))

    def _deny_local(
        self, tool: str, input: Any, reason: Reason, severity: SeverityName | None
    ) -> Exchange[DecisionDict]:
        body = {"tool": tool, "input": input, "reason": reason, "severity": severity}
        return _one(_Send("POST", self._path + "/denials", json=body))

    def _withdraw(self, action_id: str, timeout: float) -> Exchange[Action]:
        path = self._action_path(action_id) + "/withdraw"
        return _one(_Send("POST", path, json={"timeout": timeout}))

    def _waits(self, action_id: str, timeout: float, poll: float) -> Exchange[ActionStatusName]:
        """The long-poll loop: a decision wakes it at once; a server that does not long-poll is
        asked every ``poll`` seconds, and one holding all the waits it allows (429) again after
        its ``Retry-After``."""
        check_wait(timeout, poll)
        deadline = time.monotonic() + timeout
        announced = False
        while True:
            left = deadline - time.monotonic()
            wait = round(max(0.0, min(left, _WAIT_CHUNK)), 3)
            started = time.monotonic()
            try:
                action: Action = yield _Send(
                    "GET",
                    self._action_path(action_id),
                    params={"wait": wait} if wait > 0 else None,
                    timeout=self.timeout + wait,
                )
            except errors.TooManyWaits as busy:
                # The server holds all the waits it allows: ask again when it says.
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ApprovalTimeout(action_id, timeout) from None
                yield min(busy.retry_after, left)
                continue
            if action["status"] != "pending_approval":
                return action["status"]
            announced = announced or announce_wait(
                self.agent_id, action_id, timeout, self.approval_hint(action_id)
            )
            left = deadline - time.monotonic()
            if left <= 0:
                raise ApprovalTimeout(action_id, timeout)
            if time.monotonic() - started < wait / 2:
                yield min(poll, left)

    # -- the agent guard, blocking and async -----------------------------------------------------

    def request(
        self, tool: str, input: Any = None, cost: Any = None, *, idempotency_key: str | None = None
    ) -> DecisionDict:
        """Ask before acting: ``{"decision": "allowed" | "denied" | "pending_approval", ...}``."""
        with tracing.guard_call_span("request", agent_id=self.agent_id):
            return self._sync(self._request(tool, input, cost, idempotency_key))

    async def arequest(
        self, tool: str, input: Any = None, cost: Any = None, *, idempotency_key: str | None = None
    ) -> DecisionDict:
        """``request`` for async code."""
        with tracing.guard_call_span("request", agent_id=self.agent_id):
            return await self._async(self._request(tool, input, cost, idempotency_key))

    def request_approval(self, tool: str, input: Any, cost: Any, reason: Reason) -> DecisionDict:
        """``request``, sending this one call to a human (``reason`` says why) if checks pass."""
        with tracing.guard_call_span("request", agent_id=self.agent_id):
            return self._sync(self._request(tool, input, cost, None, reason))

    async def arequest_approval(
        self, tool: str, input: Any, cost: Any, reason: Reason
    ) -> DecisionDict:
        """``request_approval`` for async code."""
        with tracing.guard_call_span("request", agent_id=self.agent_id):
            return await self._async(self._request(tool, input, cost, None, reason))

    def policy(self) -> Policy:
        """The agent's own policy, read once from the server (it never changes)."""
        if self._policy is None:
            data = self._sync(_one(_Send("GET", self._path + "/policy")))
            self._policy = Policy.from_dict(data["policy"])
        return self._policy

    def report(
        self, action_id: str, status: str, detail: str = "", *, fault: FaultName = "agent"
    ) -> AgentStatus:
        """Report ``success`` or ``failure`` (``harmful`` is the operator's, 403 here); a
        failure whose ``fault`` is ``upstream`` or ``caller`` leaves no scar."""
        with tracing.guard_call_span("report", agent_id=self.agent_id):
            return self._sync(self._report(action_id, status, detail, fault))

    async def areport(
        self, action_id: str, status: str, detail: str = "", *, fault: FaultName = "agent"
    ) -> AgentStatus:
        """``report`` for async code."""
        with tracing.guard_call_span("report", agent_id=self.agent_id):
            return await self._async(self._report(action_id, status, detail, fault))

    def status(self) -> AgentStatus:
        with tracing.guard_call_span("status", agent_id=self.agent_id):
            return cast(AgentStatus, self._sync(_one(_Send("GET", self._path))))

    async def astatus(self) -> AgentStatus:
        with tracing.guard_call_span("status", agent_id=self.agent_id):
            return cast(AgentStatus, await self._async(_one(_Send("GET", self._path))))

    def action(self, action_id: str) -> Action:
        with tracing.guard_call_span("action", agent_id=self.agent_id):
            return cast(Action, self._sync(_one(_Send("GET", self._action_path(action_id)))))

    async def aaction(self, action_id: str) -> Action:
        with tracing.guard_call_span("action", agent_id=self.agent_id):
            call = _Send("GET", self._action_path(action_id))
            return cast(Action, await self._async(_one(call)))

    def deny_local(
        self, tool: str, input: Any, reason: Reason, severity: SeverityName | None = "moderate"
    ) -> DecisionDict:
        """Record a denial a local check decided (``path_denied``...): it lands in the ledger."""
        with tracing.guard_call_span("deny_local", agent_id=self.agent_id):
            return self._sync(self._deny_local(tool, input, reason, severity))

    async def adeny_local(
        self, tool: str, input: Any, reason: Reason, severity: SeverityName | None = "moderate"
    ) -> DecisionDict:
        """``deny_local`` for async code."""
        with tracing.guard_call_span("deny_local", agent_id=self.agent_id):
            return await self._async(self._deny_local(tool, input, reason, severity))

    def withdraw(self, action_id: str, timeout: float) -> Action:
        """Stop waiting for a human: a still-pending action is denied (``approval_timeout``)."""
        return self._sync(self._withdraw(action_id, timeout))

    async def awithdraw(self, action_id: str, timeout: float) -> Action:
        """``withdraw`` for async code."""
        return await self._async(self._withdraw(action_id, timeout))

    def wait_for_approval(
        self, action_id: str, timeout: float = 300, poll: float = 2.0
    ) -> ActionStatusName:
        """Block until the action is decided; returns its status (``allowed`` or ``denied``).

        Long-polls (``?wait=``), so a decision wakes it at once. Says once (log ``guardkit``,
        WARNING) what it waits for. Raises ``ApprovalTimeout`` after ``timeout``; the action
        stays pending (``withdraw`` ends it, as guarded tools and the loop do).
        """
        with tracing.guard_call_span("wait_for_approval", agent_id=self.agent_id):
            return self._sync(self._waits(action_id, timeout, poll))

    async def await_for_approval(
        self, action_id: str, timeout: float = 300, poll: float = 2.0
    ) -> ActionStatusName:
        """``wait_for_approval`` for async code (long-polls without blocking the loop)."""
        with tracing.guard_call_span("wait_for_approval", agent_id=self.agent_id):
            return await self._async(self._waits(action_id, timeout, poll))

    def spawn(self, child_id: str, policy: Any, budget: int) -> NewAgent:
        """guardkit: create a sub-agent funded from this agent; ``{"agent", "token"}``."""
        body = {"child_id": child_id, "policy": policy, "budget": budget}
        return cast(NewAgent, self._call("POST", self._path + "/spawn", json=body))

    def approval_hint(self, action_id: str) -> str:
        """Where a human decides ``action_id``: the server's console, or the CLI against it."""
        return (
            f"approve or reject it in the console at {self._base}/ "
            f"(agent {self.agent_id}, {action_id})"
        )


class AdminClient(_Http):
    """The operator's client: ``AdminClient(base_url, token, timeout=30)``."""

    def __repr__(self) -> str:
        return f"AdminClient({self.url!r})"

    @staticmethod
    def _agent(agent_id: str) -> str:
        return f"/v1/agents/{_seg(agent_id)}"

    def _action(self, agent_id: str, action_id: str) -> str:
        return f"{self._agent(agent_id)}/actions/{_seg(action_id)}"

    def create_agent(self, agent_id: str, policy: Any) -> NewAgent:
        body = {"agent_id": agent_id, "policy": policy}
        return cast(NewAgent, self._call("POST", "/v1/agents", json=body))

    def agents(self) -> list[AgentEntry]:
        return cast(list[AgentEntry], self._call("GET", "/v1/agents")["agents"])

    def status(self, agent_id: str) -> AgentStatus:
        return cast(AgentStatus, self._call("GET", self._agent(agent_id)))

    def token(self, agent_id: str) -> str:
        return str(self._call("GET", self._agent(agent_id) + "/token")["token"])

    def action(self, agent_id: str, action_id: str) -> Action:
        return cast(Action, self._call("GET", self._action(agent_id, action_id)))

    def pending(self, agent_id: str) -> list[PendingItem]:
        path = self._agent(agent_id) + "/actions/pending"
        return cast(list[PendingItem], self._call("GET", path)["pending"])

    def approve(
        self, agent_id: str, action_id: str, approver: str, note: str | None = None
    ) -> DecisionDict:
        body: dict[str, str] = {"approver": approver}
        if note is not None:
            body["note"] = note
        path = self._action(agent_id, action_id) + "/approve"
        return cast(DecisionDict, self._call("POST", path, json=body))

    def reject(
        self, agent_id: str, action_id: str, approver: str, reason: str, scar: str | None = None
    ) -> DecisionDict:
        body: dict[str, str] = {"approver": approver, "reason": reason}
        if scar is not None:
            body["scar"] = scar
        path = self._action(agent_id, action_id) + "/reject"
        return cast(DecisionDict, self._call("POST", path, json=body))

    def report_harm(self, agent_id: str, action_id: str, detail: str) -> AgentStatus:
        path = self._action(agent_id, action_id) + "/outcome"
        body = {"status": "harmful", "detail": detail}
        return cast(AgentStatus, self._call("POST", path, json=body))

    def scar(
        self, agent_id: str, severity: str, reason: str, action_id: str | None = None
    ) -> AgentStatus:
        body: dict[str, str] = {"severity": severity, "reason": reason}
        if action_id is not None:
            body["action_id"] = action_id
        return cast(AgentStatus, self._call("POST", self._agent(agent_id) + "/scars", json=body))

    def terminate(self, agent_id: str, reason: str, by: str) -> AgentStatus:
        body = {"reason": reason, "by": by}
        path = self._agent(agent_id) + "/terminate"
        return cast(AgentStatus, self._call("POST", path, json=body))

    def log(self, agent_id: str, after: int | None = None, limit: int | None = None) -> LogPage:
        params = {k: v for k, v in (("after", after), ("limit", limit)) if v is not None}
        path = self._agent(agent_id) + "/log"
        return cast(LogPage, self._call("GET", path, params=params or None))

    def verify(self, agent_id: str) -> Verification:
        return cast(Verification, self._call("GET", self._agent(agent_id) + "/verify"))

    def public_key(self) -> PublicKeyInfo:
        return cast(PublicKeyInfo, self._call("GET", "/v1/public-key"))

    def spawn(self, parent_id: str, child_id: str, policy: Any, budget: int) -> NewAgent:
        body = {"child_id": child_id, "policy": policy, "budget": budget}
        return cast(NewAgent, self._call("POST", self._agent(parent_id) + "/spawn", json=body))

    def consume(
        self,
        agent_id: str,
        action_id: str,
        tool: str,
        input: Any,
        cost: Any = None,
        *,
        by: str | None = None,
    ) -> ConsumedAction:
        return _consume(self, self._action(agent_id, action_id), tool, input, cost, by)

    def export(self, agent_id: str) -> str:
        """The agent's ledger as Lineage-format JSON Lines."""
        return self._send(_Send("GET", self._agent(agent_id) + "/export")).text


class BackendClient(_Http):
    """A tool backend's client (backend token): read an action, ``consume`` it once.

    ``BackendClient(base_url, token, timeout=30)``.
    """

    def action(self, agent_id: str, action_id: str) -> Action:
        path = f"/v1/agents/{_seg(agent_id)}/actions/{_seg(action_id)}"
        return cast(Action, self._call("GET", path))

    def consume(
        self,
        agent_id: str,
        action_id: str,
        tool: str,
        input: Any,
        cost: Any = None,
        *,
        by: str | None = None,
    ) -> ConsumedAction:
        path = f"/v1/agents/{_seg(agent_id)}/actions/{_seg(action_id)}"
        return _consume(self, path, tool, input, cost, by)


def _consume(
    http: _Http, path: str, tool: str, input: Any, cost: Any, by: str | None
) -> ConsumedAction:
    body: dict[str, object] = {"tool": tool, "input": input}
    if cost is not None:
        body["cost"] = cost
    if by is not None:
        body["by"] = by
    return cast(ConsumedAction, http._call("POST", path + "/consume", json=body))
