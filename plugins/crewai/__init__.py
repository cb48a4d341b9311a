"""Guard a CrewAI crew or agent in place: ``guard(crew_or_agent, guard_agent)``.

::

    from crewai import Agent, Crew, Task
    from guardkit.plugins.crewai import guard

    crew = guard(Crew(agents=[clerk], tasks=[task]), my_guard.agent("clerk"))
    crew.kickoff()

Tool calls (``_tools``) go through CrewAI's own tool-call hooks, which every way CrewAI runs a
tool passes (native function calling, the ReAct text format, parallel calls, ``kickoff``,
``kickoff_async``, ``akickoff``, ``Agent.kickoff``): ``guard`` registers one
``before_tool_call`` and one ``after_tool_call`` hook for the process, and they act only for the
agents ``guard`` took. So a tool put in ``agent.tools`` after ``guard``, or one an MCP server
lists, is guarded like the others. The before hook runs the policy's declared checks and
requests the call (waiting for a human when the policy says so); a refusal blocks the call (the
tool never runs) and the after hook hands the model the refusal's text ("... Nothing was done.
Do not retry ...") as the tool's result, instead of CrewAI's "Tool execution blocked by hook".
The tool object's body is wrapped once (on the instance) so that the run is seen: it runs under
its ``guardkit.current_action_id()``, the after hook reports ``success`` or ``failure`` with the
exception, and a run CrewAI repeats on its own (its retries) is an action of its own.

Model turns (``_turns``): CrewAI's ``after_llm_call`` hook does not run for a model answer that
asks for tools, so a turn could never be reported there; instead the agent's LLM object has its
``call`` and ``acall`` replaced on the instance by ones that request ``llm_turn``
(``guardkit.model_turn``) when the call comes from a guarded agent (CrewAI passes
``from_agent``), and pass any other caller of a shared LLM through untouched. A refused turn
raises ``guardkit.TurnDenied``, a ``GuardStop`` that CrewAI's retries (``except Exception``) let
through, so ``kickoff`` ends there, as it does at the next turn of a terminated agent or past a
policy's ``max_calls`` on ``llm_turn``.

Approvals wait in process (``approval_timeout``) for a human at the console or the CLI. CrewAI
runs tool hooks on its worker threads, never on the event loop, so the wait holds only the call.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

from .._adapter import require

require("crewai", "crewai")

from crewai import Crew  # noqa: E402 - after the check that names the extra
from crewai.agents.agent_builder.base_agent import BaseAgent  # noqa: E402

from guardkit.protocols import AgentGuard  # noqa: E402

from ._settings import SETTINGS, CostFn, GuardSettings  # noqa: E402
from ._tools import install_hooks  # noqa: E402
from ._turns import gate  # noqa: E402

__all__ = ["CostFn", "guard"]

Guardable = TypeVar("Guardable", Crew, BaseAgent)
#: Set on a guarded agent whose copies are guarded too.
_COPIES_FOLLOWED = "_guardkit_copies_followed"


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
    settings = GuardSettings(
        "CrewAI", guard_agent, dict(costs or {}), approval_timeout, poll, frozenset(exempt)
    )
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
        _take(member, settings)
    install_hooks()
    return crew_or_agent


def _take(agent: BaseAgent, settings: GuardSettings) -> None:
    object.__setattr__(agent, SETTINGS, settings)
    gate(agent)
    if getattr(agent, _COPIES_FOLLOWED, False):
        return
    copy: Callable[..., BaseAgent] = agent.copy

    def guarded_copy(*args: Any, **kwargs: Any) -> BaseAgent:
        clone = copy(*args, **kwargs)
        _take(clone, getattr(agent, SETTINGS))  # the latest settings of the agent copied
        return clone

    # Crew.kickoff_for_each and friends run copies of the crew's agents (``agent.copy()``).
    object.__setattr__(agent, "copy", functools.wraps(copy)(guarded_copy))
    object.__setattr__(agent, _COPIES_FOLLOWED, True)


def _crew_agents(crew: Crew) -> list[BaseAgent]:
    found: dict[int, BaseAgent] = {}
    candidates = [*crew.agents, *(task.agent for task in crew.tasks), crew.manager_agent]
    for agent in candidates:
        if isinstance(agent, BaseAgent):
            found.setdefault(id(agent), agent)
    return list(found.values())
