"""``guardkit.model_turn()``: gate one model call with ``llm_turn`` in code you wrote yourself.

Lineage's first rule for a guarded loop: request ``llm_turn`` before every model call, so a
model that loops without calling a real tool still hits a limit. Around the call::

    with guardkit.model_turn():                  # raises TurnDenied when the guard refuses
        reply = client.messages.create(...)

    async with guardkit.model_turn(agent):       # the async guard API: never blocks the loop
        reply = await client.messages.create(...)

The outcome is reported when the block ends (``failure`` with the exception if it raised).
A refusal raises ``TurnDenied``, which (like ``NoAgentConfigured``) derives from
``BaseException``: retry wrappers and ``except Exception`` let it through and the agent stops.
So does ``GuardFailed``, raised when the guard's store or server fails.
"""

from __future__ import annotations

from types import TracebackType

from guardkit.decisions import DecisionDict
from guardkit.errors import TurnDenied
from guardkit.protocols import AgentGuard
from guardkit.tools.flow import Flow, Op, adrive, drive, stops_on_failure
from guardkit.tools.scope import current_agent

__all__ = ["LLM_TURN", "model_turn"]

_SITE = "model turn"

#: The tool name of a model turn, as Lineage and every policy call it.
LLM_TURN = "llm_turn"


class model_turn:
    """Request ``llm_turn`` on entry, report the turn's outcome on exit (sync or async)."""

    __slots__ = ("_agent", "decision")

    def __init__(self, agent: AgentGuard | None = None) -> None:
        self._agent = agent
        #: The allowed ``llm_turn`` decision, once entered.
        self.decision: DecisionDict | None = None

    def _resolve(self) -> AgentGuard:
        if self._agent is None:
            self._agent = current_agent(_SITE)
        return self._agent

    def _ask(self) -> Flow[DecisionDict]:
        decision: DecisionDict = yield Op("request", (LLM_TURN, {}))
        if decision["decision"] != "allowed":
            raise TurnDenied(decision["action_id"], decision.get("reason") or {"code": "denied"})
        self.decision = decision
        return decision

    def _done(self, exc: BaseException | None) -> Flow[None]:
        assert self.decision is not None
        action_id = self.decision["action_id"]
        if exc is None:
            yield Op("report", (action_id, "success"))
        else:
            yield Op("report", (action_id, "failure", f"{type(exc).__name__}: {exc}"))

    def __enter__(self) -> DecisionDict:
        with stops_on_failure(_SITE):
            return drive(self._ask(), self._resolve())

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with stops_on_failure(_SITE):
            drive(self._done(exc), self._resolve())

    async def __aenter__(self) -> DecisionDict:
        with stops_on_failure(_SITE):
            return await adrive(self._ask(), self._resolve())

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with stops_on_failure(_SITE):
            await adrive(self._done(exc), self._resolve())
