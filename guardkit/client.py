"""HTTP clients for the guard server, with Lineage's method names and signatures (§13).

``AgentClient`` is one agent's guard over HTTP (it satisfies ``guardkit.AgentGuard``, like
``LocalAgent``); ``AdminClient`` is the operator's; ``BackendClient`` is what a tool backend
(a bank, a deploy system) uses to read an action and ``consume`` it once. All three keep one
httpx connection pool alive, raise ``GuardError(status, code, message)`` (or its subclass for the
code) for an HTTP error, and ``GuardUnavailable`` when the server cannot be reached.

``AgentClient.request`` sends an ``Idempotency-Key`` and retries once on a lost connection, so a
request whose response never arrived is not decided (or charged) twice.
"""

from __future__ import annotations

import time
import uuid
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from guardkit import errors
from guardkit._agent_api import AgentConveniences
from guardkit.errors import ApprovalTimeout, GuardError, GuardUnavailable, InvalidInput

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
    cls = _BY_CODE.get(code)
    if cls is not None and cls.status == response.status_code:
        error: GuardError = cls(message)
        return error
    return GuardError(response.status_code, code, message)


def _seg(value: str) -> str:
    return quote(str(value), safe="")


class _Http:
    """One keep-alive connection pool to the server, with error mapping."""

    def __init__(self, base_url: str, token: str, timeout: float) -> None:
        self._base = base_url.rstrip("/")
        self.timeout = timeout
        self._client = httpx.Client(
            base_url=self._base,
            timeout=timeout,
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
        )

    @property
    def url(self) -> str:
        return self._base

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

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
            raise GuardUnavailable(
                f"the guard at {self._base} could not be reached; nothing was done "
                f"({type(exc).__name__}: {exc})"
            ) from exc
        if response.status_code >= 400:
            raise _error(response)
        return response

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._send(method, path, **kwargs).json()


class AgentClient(_Http, AgentConveniences):
    """One agent's guard over HTTP: ``AgentClient(base_url, agent_id, token, timeout=30)``."""

    def __init__(
        self, base_url: str, agent_id: str, token: str, timeout: float = 30, *, retries: int = 1
    ) -> None:
        super().__init__(base_url, token, timeout)
        self.agent_id = agent_id
        self.retries = retries
        self._path = f"/v1/agents/{_seg(agent_id)}"

    def __repr__(self) -> str:
        return f"AgentClient({self.url!r}, {self.agent_id!r})"

    def request(
        self, tool: str, input: Any = None, cost: Any = None, *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """Ask before acting: ``{"decision": "allowed" | "denied" | "pending_approval", ...}``."""
        body: dict[str, Any] = {"tool": tool, "input": {} if input is None else input}
        if cost is not None:
            body["cost"] = cost
        key = idempotency_key or (uuid.uuid4().hex if self.retries > 0 else None)
        headers = {"Idempotency-Key": key} if key else None
        for attempt in range(self.retries + 1):
            try:
                result: dict[str, Any] = self._call(
                    "POST", self._path + "/actions", json=body, headers=headers
                )
            except GuardUnavailable:
                if attempt >= self.retries or key is None:
                    raise
                continue
            return result
        raise AssertionError("unreachable")  # pragma: no cover

    def report(self, action_id: str, status: str, detail: str = "") -> dict[str, Any]:
        """Report ``success`` or ``failure`` (``harmful`` is the operator's, 403 here)."""
        return dict(
            self._call(
                "POST",
                f"{self._path}/actions/{_seg(action_id)}/outcome",
                json={"status": status, "detail": detail},
            )
        )

    def status(self) -> dict[str, Any]:
        return dict(self._call("GET", self._path))

    def action(self, action_id: str) -> dict[str, Any]:
        return dict(self._call("GET", f"{self._path}/actions/{_seg(action_id)}"))

    def deny_local(
        self, tool: str, input: Any, reason: dict[str, Any], severity: str | None = "moderate"
    ) -> dict[str, Any]:
        """Record a denial a local check decided (``path_denied``...): it lands in the ledger."""
        body = {"tool": tool, "input": input, "reason": reason, "severity": severity}
        return dict(self._call("POST", self._path + "/denials", json=body))

    def spawn(self, child_id: str, policy: Any, budget: int) -> dict[str, Any]:
        """guardkit: create a sub-agent funded from this agent; ``{"agent", "token"}``."""
        return dict(
            self._call(
                "POST",
                self._path + "/spawn",
                json={"child_id": child_id, "policy": policy, "budget": budget},
            )
        )

    def wait_for_approval(self, action_id: str, timeout: float = 300, poll: float = 2.0) -> str:
        """Block until the action is decided; returns its status (``allowed`` or ``denied``).

        Long-polls (``?wait=``), so a decision wakes it at once; against a server without
        long-polling it falls back to asking every ``poll`` seconds. Raises ``ApprovalTimeout``.
        """
        if poll <= 0 or timeout < 0:
            raise InvalidInput("poll must be > 0 and timeout >= 0")
        deadline = time.monotonic() + timeout
        path = f"{self._path}/actions/{_seg(action_id)}"
        while True:
            left = deadline - time.monotonic()
            wait = round(max(0.0, min(left, _WAIT_CHUNK)), 3)
            started = time.monotonic()
            action = self._call(
                "GET",
                path,
                params={"wait": wait} if wait > 0 else None,
                timeout=self.timeout + wait,
            )
            if action["status"] != "pending_approval":
                return str(action["status"])
            left = deadline - time.monotonic()
            if left <= 0:
                raise ApprovalTimeout(action_id, timeout)
            if time.monotonic() - started < wait / 2:
                time.sleep(min(poll, left))


class AdminClient(_Http):
    """The operator's client: ``AdminClient(base_url, token, timeout=30)``."""

    def __init__(self, base_url: str, token: str, timeout: float = 30) -> None:
        super().__init__(base_url, token, timeout)

    def __repr__(self) -> str:
        return f"AdminClient({self.url!r})"

    @staticmethod
    def _agent(agent_id: str) -> str:
        return f"/v1/agents/{_seg(agent_id)}"

    def _action(self, agent_id: str, action_id: str) -> str:
        return f"{self._agent(agent_id)}/actions/{_seg(action_id)}"

    def create_agent(self, agent_id: str, policy: Any) -> dict[str, Any]:
        return dict(self._call("POST", "/v1/agents", json={"agent_id": agent_id, "policy": policy}))

    def agents(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/v1/agents")["agents"])

    def status(self, agent_id: str) -> dict[str, Any]:
        return dict(self._call("GET", self._agent(agent_id)))

    def token(self, agent_id: str) -> str:
        return str(self._call("GET", self._agent(agent_id) + "/token")["token"])

    def action(self, agent_id: str, action_id: str) -> dict[str, Any]:
        return dict(self._call("GET", self._action(agent_id, action_id)))

    def pending(self, agent_id: str) -> list[dict[str, Any]]:
        return list(self._call("GET", self._agent(agent_id) + "/actions/pending")["pending"])

    def approve(
        self, agent_id: str, action_id: str, approver: str, note: str | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"approver": approver}
        if note is not None:
            body["note"] = note
        return dict(self._call("POST", self._action(agent_id, action_id) + "/approve", json=body))

    def reject(
        self, agent_id: str, action_id: str, approver: str, reason: str, scar: str | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"approver": approver, "reason": reason}
        if scar is not None:
            body["scar"] = scar
        return dict(self._call("POST", self._action(agent_id, action_id) + "/reject", json=body))

    def report_harm(self, agent_id: str, action_id: str, detail: str) -> dict[str, Any]:
        return dict(
            self._call(
                "POST",
                self._action(agent_id, action_id) + "/outcome",
                json={"status": "harmful", "detail": detail},
            )
        )

    def scar(
        self, agent_id: str, severity: str, reason: str, action_id: str | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"severity": severity, "reason": reason}
        if action_id is not None:
            body["action_id"] = action_id
        return dict(self._call("POST", self._agent(agent_id) + "/scars", json=body))

    def terminate(self, agent_id: str, reason: str, by: str) -> dict[str, Any]:
        return dict(
            self._call(
                "POST", self._agent(agent_id) + "/terminate", json={"reason": reason, "by": by}
            )
        )

    def log(
        self, agent_id: str, after: int | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        params = {k: v for k, v in (("after", after), ("limit", limit)) if v is not None}
        return dict(self._call("GET", self._agent(agent_id) + "/log", params=params or None))

    def verify(self, agent_id: str) -> dict[str, Any]:
        return dict(self._call("GET", self._agent(agent_id) + "/verify"))

    def public_key(self) -> dict[str, Any]:
        return dict(self._call("GET", "/v1/public-key"))

    def spawn(self, parent_id: str, child_id: str, policy: Any, budget: int) -> dict[str, Any]:
        return dict(
            self._call(
                "POST",
                self._agent(parent_id) + "/spawn",
                json={"child_id": child_id, "policy": policy, "budget": budget},
            )
        )

    def consume(
        self,
        agent_id: str,
        action_id: str,
        tool: str,
        input: Any,
        cost: Any = None,
        *,
        by: str | None = None,
    ) -> dict[str, Any]:
        return _consume(self, self._action(agent_id, action_id), tool, input, cost, by)

    def export(self, agent_id: str) -> str:
        """The agent's ledger as Lineage-format JSON Lines."""
        return self._send("GET", self._agent(agent_id) + "/export").text


class BackendClient(_Http):
    """A tool backend's client (backend token): read an action, ``consume`` it once."""

    def action(self, agent_id: str, action_id: str) -> dict[str, Any]:
        return dict(self._call("GET", f"/v1/agents/{_seg(agent_id)}/actions/{_seg(action_id)}"))

    def consume(
        self,
        agent_id: str,
        action_id: str,
        tool: str,
        input: Any,
        cost: Any = None,
        *,
        by: str | None = None,
    ) -> dict[str, Any]:
        path = f"/v1/agents/{_seg(agent_id)}/actions/{_seg(action_id)}"
        return _consume(self, path, tool, input, cost, by)


def _consume(
    http: _Http, path: str, tool: str, input: Any, cost: Any, by: str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"tool": tool, "input": input}
    if cost is not None:
        body["cost"] = cost
    if by is not None:
        body["by"] = by
    return dict(http._call("POST", path + "/consume", json=body))
