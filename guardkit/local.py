"""The in-process guard: ``Guard`` (the operator side) and ``LocalAgent`` (one agent's side).

Example::

    guard = Guard("guard.db")
    guard.create_agent("bot", {"budget": 30, "tools": {"llm_turn": {"cost": 1, "max_calls": 10}}})
    agent = guard.agent("bot")
    turn = agent.request("llm_turn", {})
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from guardkit._agent_api import AgentConveniences
from guardkit.decisions import ActionStatus, Severity
from guardkit.engine import DEFAULT_MAX_INPUT_BYTES, Engine
from guardkit.errors import ApprovalTimeout, InvalidInput
from guardkit.store import Store, open_store
from guardkit.store.records import write_jsonl

__all__ = ["Guard", "LocalAgent", "agent_token"]

_TOKEN_DOMAIN = b"lineage-guard-agent-token:"


def agent_token(token_key: bytes, agent_id: str) -> str:
    """Lineage's stateless agent token: ``agt_<id>.<hex HMAC-SHA256>``."""
    mac = hmac.new(token_key, _TOKEN_DOMAIN + agent_id.encode(), hashlib.sha256).hexdigest()
    return f"agt_{agent_id}.{mac}"


class Guard:
    """The operator side of an embedded guard, with Lineage ``AdminClient``'s methods.

    ``store`` is ``":memory:"``, a SQLite path, ``"sqlite:///PATH"`` (or, with the postgres
    extra, a ``postgresql://`` URL). ``durability="full"`` fsyncs every decision; ``"normal"``
    survives a process crash but not a power cut. Opening verifies every agent's ledger;
    an agent that fails is quarantined and the others keep working.
    """

    def __init__(
        self,
        store: str | os.PathLike[str] | Store = ":memory:",
        *,
        signing_key: Any = None,
        durability: str = "full",
        clock: Callable[[], float] = time.time,
        max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES,
    ) -> None:
        target = os.fspath(store) if isinstance(store, os.PathLike) else store
        self.store = open_store(target, signing_key=signing_key, durability=durability)
        self.engine = Engine(self.store, clock=clock, max_input_bytes=max_input_bytes)
        self.quarantined = self.engine.check_ledgers()

    def __enter__(self) -> Guard:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.store.close()

    @property
    def public_key(self) -> str | None:
        return self.store.signer.public_key if self.store.signer else None

    # -- Lineage AdminClient ------------------------------------------------------------------

    def create_agent(self, agent_id: str, policy: Any) -> dict[str, Any]:
        """Create an agent with a fixed policy; returns ``{"agent": status, "token": token}``."""
        status = self.engine.create_agent(agent_id, policy)
        return {"agent": status, "token": self.token(agent_id)}

    def agents(self) -> list[dict[str, Any]]:
        return self.engine.agents()

    def status(self, agent_id: str) -> dict[str, Any]:
        return self.engine.status(agent_id)

    def action(self, agent_id: str, action_id: str) -> dict[str, Any]:
        return self.engine.action(agent_id, action_id)

    def pending(self, agent_id: str) -> list[dict[str, Any]]:
        return self.engine.pending(agent_id)

    def approve(
        self, agent_id: str, action_id: str, approver: str, note: str | None = None
    ) -> dict[str, Any]:
        return self.engine.approve(agent_id, action_id, approver, note).to_dict()

    def reject(
        self, agent_id: str, action_id: str, approver: str, reason: str, scar: str | None = None
    ) -> dict[str, Any]:
        return self.engine.reject(agent_id, action_id, approver, reason, scar).to_dict()

    def report_harm(self, agent_id: str, action_id: str, detail: str) -> dict[str, Any]:
        return self.engine.report(agent_id, action_id, "harmful", detail, operator=True)

    def scar(
        self, agent_id: str, severity: str, reason: str, action_id: str | None = None
    ) -> dict[str, Any]:
        return self.engine.scar(agent_id, severity, reason, action_id)

    def terminate(self, agent_id: str, reason: str, by: str) -> dict[str, Any]:
        return self.engine.terminate(agent_id, reason, by)

    def log(
        self, agent_id: str, after: int | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        return self.engine.log(agent_id, after, limit)

    def verify(self, agent_id: str) -> dict[str, Any]:
        return self.engine.verify(agent_id)

    def public_key_info(self) -> dict[str, Any]:
        return {"public_key": self.public_key, "algorithm": "ed25519"}

    # -- guardkit additions ---------------------------------------------------------------------

    def spawn(self, parent_id: str, child_id: str, policy: Any, budget: int) -> dict[str, Any]:
        """Create a sub-agent funded from ``parent_id``'s budget; returns like ``create_agent``."""
        status = self.engine.spawn(parent_id, child_id, policy, budget)
        return {"agent": status, "token": self.token(child_id)}

    def consume(
        self,
        agent_id: str,
        action_id: str,
        tool: str,
        input: Any,
        cost: Any = None,
        *,
        by: str = "backend",
    ) -> dict[str, Any]:
        """The backend role's check before acting; succeeds once per allowed action."""
        return self.engine.consume(agent_id, action_id, tool, input, cost, by=by)

    def export(self, agent_id: str, out: str | os.PathLike[str] | IO[str]) -> int:
        """Write the agent's ledger as Lineage-format JSON Lines; returns the record count."""
        self.engine.status(agent_id)
        records = self.store.iter_records(agent_id)
        if isinstance(out, (str, os.PathLike)):
            with Path(out).open("w", encoding="utf-8") as handle:
                return write_jsonl(records, handle)
        return write_jsonl(records, out)

    def token(self, agent_id: str) -> str:
        """The agent's token (the same every time; rotating the token key revokes them all)."""
        with self.store.transaction() as tx:
            key = tx.get_meta("token_key")
            if key is None:
                key = secrets.token_hex(32)
                tx.set_meta("token_key", key)
        return agent_token(bytes.fromhex(key), agent_id)

    def agent(self, agent_id: str) -> LocalAgent:
        """The agent side for ``agent_id``: what the agent's loop and tools talk to."""
        self.engine.status(agent_id)
        return LocalAgent(self, agent_id)


class LocalAgent(AgentConveniences):
    """One agent's view of an in-process guard, with Lineage ``AgentClient``'s methods."""

    def __init__(self, guard: Guard, agent_id: str) -> None:
        self.guard = guard
        self.agent_id = agent_id
        self._engine = guard.engine

    def __repr__(self) -> str:
        return f"LocalAgent({self.agent_id!r}, store={self.guard.store.location!r})"

    def request(self, tool: str, input: Any = None, cost: Any = None) -> dict[str, Any]:
        """Ask before acting: ``{"decision": "allowed" | "denied" | "pending_approval", ...}``."""
        return self._engine.request(self.agent_id, tool, input, cost).to_dict()

    def report(self, action_id: str, status: str, detail: str = "") -> dict[str, Any]:
        """Report ``success`` or ``failure``; an agent may not report ``harmful``."""
        return self._engine.report(self.agent_id, action_id, status, detail, operator=False)

    def deny_local(
        self, tool: str, input: Any, reason: dict[str, Any], severity: str | None = "moderate"
    ) -> dict[str, Any]:
        """Record a denial a local check decided (``path_denied``...): it lands in the ledger."""
        level = Severity(severity) if severity is not None else None
        return self._engine.deny(self.agent_id, tool, input, reason, level).to_dict()

    def status(self) -> dict[str, Any]:
        return self._engine.status(self.agent_id)

    def action(self, action_id: str) -> dict[str, Any]:
        return self._engine.action(self.agent_id, action_id)

    def wait_for_approval(self, action_id: str, timeout: float = 300, poll: float = 2.0) -> str:
        """Block until the action is decided; returns its status (``allowed`` or ``denied``).

        An approval in this process wakes the waiter at once; one made by another process is
        seen within ``poll`` seconds. Raises ``ApprovalTimeout`` (a ``TimeoutError``).
        """
        if poll <= 0 or timeout < 0:
            raise InvalidInput("poll must be > 0 and timeout >= 0")
        deadline = time.monotonic() + timeout
        condition = self._engine.decided
        while True:
            with condition:
                status = str(self.action(action_id)["status"])
                if status != ActionStatus.PENDING_APPROVAL:
                    return status
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ApprovalTimeout(action_id, timeout)
                condition.wait(min(poll, left))
