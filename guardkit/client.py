"""HTTP clients for the guard server, with Lineage's method names and signatures (§13).

``AgentClient`` is one agent's guard over HTTP (it satisfies ``guardkit.AgentGuard``, like
``LocalAgent``); ``AdminClient`` is the operator's; ``BackendClient`` is what a tool backend
(a bank, a deploy system) uses to read an action and ``consume`` it once. All three keep one
httpx connection pool alive, raise ``GuardError(status, code, message)`` (or its subclass for the
code) for an HTTP error, and ``GuardUnavailable`` when the server cannot be reached.

``AgentClient.request`` sends an ``Idempotency-Key`` and retries once on a lost connection, so a
request whose response never arrived is not decided (or charged) twice. Every ``AgentClient``
call has an ``async`` twin (``arequest``, ``areport``, ``astatus``, ``aaction``,
``await_for_approval``) over an ``httpx.AsyncClient`` made on first use.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from types import TracebackType
from typing import Any, cast
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
        self._async: tuple[asyncio.AbstractEventLoop, httpx.AsyncClient] | None = None

    @property
    def url(self) -> str:
        return self._base

    def close(self) -> None:
        self._client.close()

    async def aclose(self) -> None:
        """Close both connection pools."""
        self.close()
        if self._async is not None:
            await self._async[1].aclose()
            self._async = None

    def __enter__(self) -> Any:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _unreachable(self, exc: httpx.TransportError) -> GuardUnavailable:
        return GuardUnavailable(
            f"the guard at {self._base} could not be reached; nothing was done "
            f"({type(exc).__name__}: {exc})"
        )

    def _send(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        try:
            response = self._client.request(
                method,
                path,
                json=json,
                params=params,
                headers=headers,
                timeout=self.timeout if timeout is None else timeout,
            )
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from exc
        if response.status_code >= 400:
            raise _error(response)
        return response

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._send(method, path, **kwargs).json()

    def _async_client(self) -> httpx.AsyncClient:
        # An AsyncClient belongs to the event loop it first ran on: make one per loop.
        loop = asyncio.get_running_loop()
        if self._async is None or self._async[0] is not loop:
            self._async = (
                loop,
                httpx.AsyncClient(base_url=self._base, timeout=self.timeout, headers=self._headers),
            )
        return self._async[1]

    async def _acall(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Any = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> Any:
        try:
            response = await self._async_client().request(
                method,
                path,
                json=json,
                params=params,
                headers=headers,
                timeout=self.timeout if timeout is None else timeout,
            )
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from exc
        if response.status_code >= 400:
            raise _error(response)
        return response.json()


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

    def _request_body(
        self, tool: str, input: Any, cost: Any, key: str | None, approval: Reason | None = None
    ) -> tuple[dict[str, Any], dict[str, str] | None, str | None]:
        body: dict[str, Any] = {"tool": tool, "input": {} if input is None else input}
        if cost is not None:
            body["cost"] = cost
        if approval is not None:
            body["approval_reason"] = approval
        key = key or (uuid.uuid4().hex if self.retries > 0 else None)
        return body, ({"Idempotency-Key": key} if key else None), key

    def _post_request(
        self, body: dict[str, Any], headers: dict[str, str] | None, key: str | None
    ) -> DecisionDict:
        with tracing.guard_call_span("request", agent_id=self.agent_id):
            for attempt in range(self.retries + 1):
                try:
                    result = self._call("POST", self._path + "/actions", json=body, headers=headers)
                except GuardUnavailable:
                    if attempt >= self.retries or key is None:
                        raise
                    continue
                return cast(DecisionDict, result)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _apost_request(
        self, body: dict[str, Any], headers: dict[str, str] | None, key: str | None
    ) -> DecisionDict:
        with tracing.guard_call_span("request", agent_id=self.agent_id):
            for attempt in range(self.retries + 1):
                try:
                    result = await self._acall(
                        "POST", self._path + "/actions", json=body, headers=headers
                    )
                except GuardUnavailable:
                    if attempt >= self.retries or key is None:
                        raise
                    continue
                return cast(DecisionDict, result)
        raise AssertionError("unreachable")  # pragma: no cover

    def request(
        self, tool: str, input: Any = None, cost: Any = None, *, idempotency_key: str | None = None
    ) -> DecisionDict:
        """Ask before acting: ``{"decision": "allowed" | "denied" | "pending_approval", ...}``."""
        return self._post_request(*self._request_body(tool, input, cost, idempotency_key))

    async def arequest(
        self, tool: str, input: Any = None, cost: Any = None, *, idempotency_key: str | None = None
    ) -> DecisionDict:
        """``request`` for async code."""
        return await self._apost_request(*self._request_body(tool, input, cost, idempotency_key))

    def request_approval(self, tool: str, input: Any, cost: Any, reason: Reason) -> DecisionDict:
        """``request``, sending this one call to a human (``reason`` says why) if checks pass."""
        return self._post_request(*self._request_body(tool, input, cost, None, reason))

    async def arequest_approval(
        self, tool: str, input: Any, cost: Any, reason: Reason
    ) -> DecisionDict:
        """``request_approval`` for async code."""
        return await self._apost_request(*self._request_body(tool, input, cost, None, reason))

    def policy(self) -> Policy:
        """The agent's own policy, read once from the server (it never changes)."""
        if self._policy is None:
            data = self._call("GET", self._path + "/policy")
            self._policy = Policy.from_dict(data["policy"])
        return self._policy

    def report(self, action_id: str, status: str, detail: str = "") -> AgentStatus:
        """Report ``success`` or ``failure`` (``harmful`` is the operator's, 403 here)."""
        body = {"status": status, "detail": detail}
        with tracing.guard_call_span("report", agent_id=self.agent_id):
            return cast(AgentStatus, self._call("POST", self._outcome(action_id), json=body))

    async def areport(self, action_id: str, status: str, detail: str = "") -> AgentStatus:
        """``report`` for async code."""
        body = {"status": status, "detail": detail}
        with tracing.guard_call_span("report", agent_id=self.agent_id):
            return cast(AgentStatus, await self._acall("POST", self._outcome(action_id), json=body))

    def _outcome(self, action_id: str) -> str:
        return f"{self._path}/actions/{_seg(action_id)}/outcome"

    def status(self) -> AgentStatus:
        with tracing.guard_call_span("status", agent_id=self.agent_id):
            return cast(AgentStatus, self._call("GET", self._path))

    async def astatus(self) -> AgentStatus:
        with tracing.guard_call_span("status", agent_id=self.agent_id):
            return cast(AgentStatus, await self._acall("GET", self._path))

    def action(self, action_id: str) -> Action:
        with tracing.guard_call_span("action", agent_id=self.agent_id):
            return cast(Action, self._call("GET", f"{self._path}/actions/{_seg(action_id)}"))

    async def aaction(self, action_id: str) -> Action:
        path = f"{self._path}/actions/{_seg(action_id)}"
        with tracing.guard_call_span("action", agent_id=self.agent_id):
            return cast(Action, await self._acall("GET", path))

    def deny_local(
        self, tool: str, input: Any, reason: Reason, severity: SeverityName | None = "moderate"
    ) -> DecisionDict:
        """Record a denial a local check decided (``path_denied``...): it lands in the ledger."""
        body = {"tool": tool, "input": input, "reason": reason, "severity": severity}
        with tracing.guard_call_span("deny_local", agent_id=self.agent_id):
            return cast(DecisionDict, self._call("POST", self._path + "/denials", json=body))

    async def adeny_local(
        self, tool: str, input: Any, reason: Reason, severity: SeverityName | None = "moderate"
    ) -> DecisionDict:
        """``deny_local`` for async code."""
        body = {"tool": tool, "input": input, "reason": reason, "severity": severity}
        with tracing.guard_call_span("deny_local", agent_id=self.agent_id):
            return cast(DecisionDict, await self._acall("POST", self._path + "/denials", json=body))

    def spawn(self, child_id: str, policy: Any, budget: int) -> NewAgent:
        """guardkit: create a sub-agent funded from this agent; ``{"agent", "token"}``."""
        body = {"child_id": child_id, "policy": policy, "budget": budget}
        return cast(NewAgent, self._call("POST", self._path + "/spawn", json=body))

    def withdraw(self, action_id: str, timeout: float) -> Action:
        """Stop waiting for a human: a still-pending action is denied (``approval_timeout``)."""
        path = f"{self._path}/actions/{_seg(action_id)}/withdraw"
        return cast(Action, self._call("POST", path, json={"timeout": timeout}))

    async def awithdraw(self, action_id: str, timeout: float) -> Action:
        """``withdraw`` for async code."""
        path = f"{self._path}/actions/{_seg(action_id)}/withdraw"
        return cast(Action, await self._acall("POST", path, json={"timeout": timeout}))

    def approval_hint(self, action_id: str) -> str:
        """Where a human decides ``action_id``: the server's console, or the CLI against it."""
        return (
            f"approve or reject it in the console at {self._base}/ "
            f"(agent {self.agent_id}, {action_id})"
        )

    def wait_for_approval(
        self, action_id: str, timeout: float = 300, poll: float = 2.0
    ) -> ActionStatusName:
        """Block until the action is decided; returns its status (``allowed`` or ``denied``).

        Long-polls (``?wait=``), so a decision wakes it at once; against a server without
        long-polling it falls back to asking every ``poll`` seconds, and a server holding all
        the waits it allows (429) is asked again after its ``Retry-After``. Says once (log
        ``guardkit``, WARNING) what it waits for. Raises ``ApprovalTimeout`` after ``timeout``;
        the action stays pending (``withdraw`` ends it, as guarded tools and the loop do).
        """
        check_wait(timeout, poll)
        deadline = time.monotonic() + timeout
        path = f"{self._path}/actions/{_seg(action_id)}"
        announced = False
        with tracing.guard_call_span("wait_for_approval", agent_id=self.agent_id):
            while True:
                left = deadline - time.monotonic()
                wait = round(max(0.0, min(left, _WAIT_CHUNK)), 3)
                started = time.monotonic()
                try:
                    action = self._call(
                        "GET",
                        path,
                        params={"wait": wait} if wait > 0 else None,
                        timeout=self.timeout + wait,
                    )
                except errors.TooManyWaits as busy:
                    # The server holds all the waits it allows: ask again when it says.
                    time.sleep(max(0.0, min(busy.retry_after, deadline - time.monotonic())))
                    if time.monotonic() >= deadline:
                        raise ApprovalTimeout(action_id, timeout) from None
                    continue
                if action["status"] != "pending_approval":
                    return cast(ActionStatusName, action["status"])
                announced = announced or announce_wait(
                    self.agent_id, action_id, timeout, self.approval_hint(action_id)
                )
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ApprovalTimeout(action_id, timeout)
                if time.monotonic() - started < wait / 2:
                    time.sleep(min(poll, left))

    async def await_for_approval(
        self, action_id: str, timeout: float = 300, poll: float = 2.0
    ) -> ActionStatusName:
        """``wait_for_approval`` for async code (long-polls without blocking the loop)."""
        check_wait(timeout, poll)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        path = f"{self._path}/actions/{_seg(action_id)}"
        announced = False
        with tracing.guard_call_span("wait_for_approval", agent_id=self.agent_id):
            while True:
                left = deadline - loop.time()
                wait = round(max(0.0, min(left, _WAIT_CHUNK)), 3)
                started = loop.time()
                try:
                    action = await self._acall(
                        "GET",
                        path,
                        params={"wait": wait} if wait > 0 else None,
                        timeout=self.timeout + wait,
                    )
                except errors.TooManyWaits as busy:
                    await asyncio.sleep(max(0.0, min(busy.retry_after, deadline - loop.time())))
                    if loop.time() >= deadline:
                        raise ApprovalTimeout(action_id, timeout) from None
                    continue
                if action["status"] != "pending_approval":
                    return cast(ActionStatusName, action["status"])
                announced = announced or announce_wait(
                    self.agent_id, action_id, timeout, self.approval_hint(action_id)
                )
                left = deadline - loop.time()
                if left <= 0:
                    raise ApprovalTimeout(action_id, timeout)
                if loop.time() - started < wait / 2:
                    await asyncio.sleep(min(poll, left))


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
        return self._send("GET", self._agent(agent_id) + "/export").text


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
    body: dict[str, Any] = {"tool": tool, "input": input}
    if cost is not None:
        body["cost"] = cost
    if by is not None:
        body["by"] = by
    return cast(ConsumedAction, http._call("POST", path + "/consume", json=body))
