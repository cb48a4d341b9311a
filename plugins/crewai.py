"""Guard a CrewAI crew or agent in place: ``guard(crew_or_agent, guard_agent)``.

::

    from crewai import Agent, Crew, Task
    from guardkit.plugins.crewai import guard

    crew = guard(Crew(agents=[clerk], tasks=[task]), my_guard.agent("clerk"))
    crew.kickoff()

Tool calls go through CrewAI's own tool-call hooks, which every way CrewAI runs a tool passes
(native function calling, the ReAct text format, parallel calls, ``kickoff``, ``kickoff_async``,
``akickoff``, ``Agent.kickoff``): ``guard`` registers one ``before_tool_call`` and one
``after_tool_call`` hook for the process, and they act only for the agents ``guard`` took. So a
tool put in ``agent.tools`` after ``guard``, or one an MCP server lists, is guarded like the
others. The before hook runs the policy's declared checks and requests the call with its
arguments (waiting for a human when the policy says so); a refusal blocks the call (the hook
returns ``False``: the tool never runs) and the after hook hands the model the refusal's text
("... Nothing was done. Do not retry ...") as the tool's result, instead of CrewAI's "Tool
execution blocked by hook". An allowed call is reported in the after hook: ``success``, or
``failure`` with CrewAI's words for the tool's error.

Model turns: CrewAI's ``after_llm_call`` hook does not run for a model answer that asks for tools,
so a turn could never be reported there; instead the agent's LLM object has its ``call`` and
``acall`` replaced on the instance by ones that request ``llm_turn`` (``guardkit.model_turn``)
when the call comes from a guarded agent (CrewAI passes ``from_agent``), and pass any other
caller of a shared LLM through untouched. A refused turn raises ``guardkit.TurnDenied``, a
``GuardStop`` that CrewAI's retries (``except Exception``) let through, so ``kickoff`` ends
there, as it does at the next turn of a terminated agent or past a policy's ``max_calls`` on
``llm_turn``.

Approvals wait in process (``approval_timeout``) for a human at the console or the CLI. CrewAI
runs tool hooks on its worker threads, never on the event loop, so the wait holds only the call.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ._adapter import require

require("crewai", "crewai")

from crewai import Crew  # noqa: E402 - after the check that names the extra
from crewai.agents.agent_builder.base_agent import BaseAgent  # noqa: E402
from crewai.hooks import InterceptionPoint, ToolCallHookContext  # noqa: E402
from crewai.hooks.dispatch import get_global_hook_list  # noqa: E402
from crewai.llms.base_llm import BaseLLM  # noqa: E402

from guardkit.decisions import FaultName, Reason  # noqa: E402
from guardkit.errors import GuardError, InvalidInput, InvalidState, ToolDenied  # noqa: E402
from guardkit.protocols import AgentGuard  # noqa: E402
from guardkit.refusals import Refusal, refusal, refusal_or_stop  # noqa: E402
from guardkit.tools import enforce  # noqa: E402
from guardkit.tools.asking import settle  # noqa: E402
from guardkit.tools.binding import jsonable  # noqa: E402
from guardkit.tools.flow import Flow, drive, stops_on_failure  # noqa: E402
from guardkit.tools.outcome import report  # noqa: E402
from guardkit.tools.scope import current_agent  # noqa: E402
from guardkit.tools.turns import model_turn  # noqa: E402

__all__ = ["CostFn", "guard"]

CostFn = Callable[[Mapping[str, Any]], Any]
Guardable = TypeVar("Guardable", Crew, BaseAgent)
#: On a guarded agent: the settings of the latest ``guard`` call that took it.
_SETTINGS = "_guardkit_settings"
#: Set on an LLM object whose calls already go through the guard.
_MARK = "_guardkit_guarded"
#: How CrewAI words a tool that raised (native function calling), and a blocked call.
_TOOL_ERROR = "Error executing tool:"
_BLOCKED = "Tool execution blocked by hook."
#: ``from_agent``'s position in ``BaseLLM.call(messages, tools, callbacks, available_functions,
#: from_task, from_agent, ...)``, for a caller that passes it positionally.
_FROM_AGENT = 5


class _Settings:
    __slots__ = ("approval_timeout", "costs", "exempt", "guard", "poll")

    def __init__(
        self,
        guard_agent: AgentGuard | None,
        costs: dict[str, CostFn],
        approval_timeout: float,
        poll: float,
        exempt: frozenset[str],
    ) -> None:
        self.guard = guard_agent
        self.costs = costs
        self.approval_timeout = approval_timeout
        self.poll = poll
        self.exempt = exempt

    def agent(self) -> AgentGuard:
        return self.guard if self.guard is not None else current_agent("CrewAI call")


def guard(
    crew_or_agent: Guardable,
    guard_agent: AgentGuard | None = None,
    *,
    costs: Mapping[str, CostFn] | None = None,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
    exempt: Collection[str] = (),
) -> Guardable:
    """Guard a ``Crew`` (every agent it holds, its tasks' agents and its manager) or one
    ``Agent`` in place, and return it.

    ``guard_agent`` is any ``guardkit.AgentGuard`` (``LocalAgent``, ``AgentClient``); ``None``
    asks ``guardkit.current_agent()`` at each call. ``costs`` maps a tool name to the charge of a
    call from its arguments (else the policy's cost); tools named in ``exempt`` are left alone.
    Calling ``guard`` again changes nothing but the settings.

    >>> crew = guard(Crew(agents=[clerk], tasks=[task]), g.agent("clerk"),
    ...              costs={"pay": lambda args: args["amount"]})
    """
    settings = _Settings(guard_agent, dict(costs or {}), approval_timeout, poll, frozenset(exempt))
    if isinstance(crew_or_agent, Crew):
        members = _crew_agents(crew_or_agent)
    elif isinstance(crew_or_agent, BaseAgent):
        members = [crew_or_agent]
    else:
        raise TypeError(
            "guardkit.plugins.crewai.guard takes a crewai Crew or Agent, not "
            f"{type(crew_or_agent).__name__}"
        )
    for member in members:
        object.__setattr__(member, _SETTINGS, settings)
        _gate(member)
    _install_hooks()
    return crew_or_agent


def _crew_agents(crew: Crew) -> list[BaseAgent]:
    found: dict[int, BaseAgent] = {}
    candidates = [*crew.agents, *(task.agent for task in crew.tasks), crew.manager_agent]
    for agent in candidates:
        if isinstance(agent, BaseAgent):
            found.setdefault(id(agent), agent)
    return list(found.values())


def _settings_of(agent: Any) -> _Settings | None:
    """The settings of a guarded agent (or of the agent a ``LiteAgent`` runs for)."""
    for candidate in (agent, getattr(agent, "original_agent", None)):
        settings = getattr(candidate, _SETTINGS, None)
        if isinstance(settings, _Settings):
            return settings
    return None


# -- model turns -------------------------------------------------------------------------------


def _gate(agent: BaseAgent) -> None:
    """Gate the agent's LLMs (one may have been set or replaced since the last ``guard``)."""
    fields = vars(agent)  # not getattr: reading the deprecated function_calling_llm warns
    for name in ("llm", "function_calling_llm"):
        llm = fields.get(name)
        if isinstance(llm, BaseLLM) and not getattr(llm, _MARK, False):
            _gate_llm(llm)


def _caller(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> _Settings | None:
    owner = kwargs.get("from_agent", args[_FROM_AGENT] if len(args) > _FROM_AGENT else None)
    return _settings_of(owner)


def _gate_llm(llm: BaseLLM) -> None:
    call: Callable[..., Any] = llm.call
    acall: Callable[..., Awaitable[Any]] = llm.acall

    def gated_call(*args: Any, **kwargs: Any) -> Any:
        settings = _caller(args, kwargs)
        if settings is None:  # a shared LLM called for someone the guard does not own
            return call(*args, **kwargs)
        with model_turn(settings.agent()):
            return call(*args, **kwargs)

    async def gated_acall(*args: Any, **kwargs: Any) -> Any:
        settings = _caller(args, kwargs)
        if settings is None:
            return await acall(*args, **kwargs)
        async with model_turn(settings.agent()):
            return await acall(*args, **kwargs)

    # LLMs are pydantic models: replace the methods on this instance only, past its __setattr__.
    object.__setattr__(llm, "call", functools.wraps(call)(gated_call))
    object.__setattr__(llm, "acall", functools.wraps(acall)(gated_acall))
    object.__setattr__(llm, _MARK, True)


# -- tool calls --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Started:
    """An allowed call under way: who to report it to."""

    guard: AgentGuard
    action_id: str


#: Calls between their before and after hooks, by the identity of their input dict (CrewAI hands
#: the same dict to both hooks of a call; it is kept here so its id cannot be reused meanwhile).
_calls: dict[int, tuple[dict[str, Any], _Started | Refusal]] = {}
_hooks_lock = threading.Lock()


def _before_tool_call(context: ToolCallHookContext) -> bool | None:
    settings = _settings_of(context.agent)
    if settings is None or context.tool_name in settings.exempt:
        return None
    if context.agent is not None:
        _gate(context.agent)  # an LLM given to the agent since ``guard``, before it is called
    arguments = context.tool_input
    try:
        started = _ask(settings, context.tool_name, arguments)
    # CrewAI swallows what a hook raises and runs the tool (fail-open): refuse the call instead.
    except Exception as exc:  # noqa: BLE001
        started = _guard_broke(exc)
    _calls[id(arguments)] = (arguments, started)
    return False if isinstance(started, Refusal) else None


def _after_tool_call(context: ToolCallHookContext) -> str | None:
    found = _calls.pop(id(context.tool_input), None)
    if found is None:
        return None
    started = found[1]
    if isinstance(started, Refusal):
        return started.text
    result = context.tool_result
    if isinstance(result, str) and result.startswith(_BLOCKED):
        # A hook after ours blocked the call: it did not run, and that was not the agent's doing.
        _report(started, "failure", "not run: another before_tool_call hook blocked it", "caller")
    elif isinstance(result, str) and result.startswith(_TOOL_ERROR):
        _report(started, "failure", result[len(_TOOL_ERROR) :].strip())
    else:
        _report(started, "success")
    return None


def _ask(settings: _Settings, name: str, arguments: dict[str, Any]) -> _Started | Refusal:
    agent = settings.agent()
    cost_fn = settings.costs.get(name)
    cost = cost_fn(arguments) if cost_fn is not None else None
    try:
        with stops_on_failure(f"tool call {name!r}"):
            asked = drive(_asking(agent, settings, name, arguments, cost), agent)
    except GuardError as exc:
        found = refusal_or_stop(exc, f"tool call {name!r}")
        if found is None:
            raise
        return found
    return asked if isinstance(asked, Refusal) else _Started(agent, asked)


def _asking(
    agent: AgentGuard, settings: _Settings, name: str, arguments: dict[str, Any], cost: Any
) -> Flow[str | Refusal]:
    """Check the declared rules, request, wait for a human: the action id, or the refusal."""
    try:
        call = yield from enforce.checked(agent, name, arguments, jsonable(arguments))
        decision = yield from enforce.request(name, call, cost)
    except ToolDenied as exc:
        denied = refusal(exc)
        assert denied is not None
        return denied
    except InvalidInput as exc:  # the model's input cannot be recorded as it is (too large...)
        return _mistake("invalid_arguments", f"Error: {exc.message}. Nothing was done.")
    decision = yield from settle(
        agent, decision, approval_timeout=settings.approval_timeout, poll=settings.poll
    )
    if decision["decision"] == "allowed":
        return decision["action_id"]
    found = refusal(decision)
    assert found is not None
    return found


def _mistake(code: str, text: str) -> Refusal:
    reason: Reason = {"code": code, "message": text}
    return Refusal(text=text, code=code, reason=reason)


def _guard_broke(exc: Exception) -> Refusal:
    return _mistake(
        "guard_error",
        f"Error: the policy guard could not decide on this call ({type(exc).__name__}: {exc}). "
        "Nothing was done.",
    )


def _report(started: _Started, status: str, detail: str = "", fault: FaultName = "agent") -> None:
    # InvalidState: an operator already recorded this action's outcome.
    with contextlib.suppress(InvalidState), stops_on_failure("tool call outcome"):
        drive(report(started.action_id, status, detail, fault), started.guard)


def _install_hooks() -> None:
    """Register the two tool hooks once for the process: ours last among the before hooks (so
    the guard sees the arguments as they will run) and first among the after hooks (so it reads
    the result as CrewAI made it)."""
    with _hooks_lock:
        before = get_global_hook_list(InterceptionPoint.PRE_TOOL_CALL)
        after = get_global_hook_list(InterceptionPoint.POST_TOOL_CALL)
        for hooks, hook in ((before, _before_tool_call), (after, _after_tool_call)):
            while hook in hooks:
                hooks.remove(hook)
        before.append(_before_tool_call)
        after.insert(0, _after_tool_call)
