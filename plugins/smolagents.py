"""Guard a smolagents agent in place: ``guard(agent, guard_agent)``.

::

    from smolagents import CodeAgent
    from guardkit.plugins.smolagents import guard

    agent = guard(CodeAgent(tools=[...], model=model), my_guard.agent("bot"))
    agent.run("...")

Works for ``ToolCallingAgent`` and ``CodeAgent`` alike, without touching a tool's source (smolagents
inspects and validates that source, so no decorator goes on it): each ``Tool`` object the agent
holds has its ``forward`` replaced on the instance by one that hands the call to
``guardkit.call_tool``. So a tool the model calls by name, and a tool the model's own Python calls
inside ``CodeAgent``'s executor (``search(q="x")`` in generated code), are each requested from
the guard, once, with their named arguments: run only if allowed, reported ``success`` or
``failure``, and a refusal comes back as the tool's result ("... Nothing was done. Do not retry
..."), never as an error smolagents would turn into "Please try again".

Model turns: every call of the agent's model (``generate`` and ``generate_stream``, the planning
steps included) first requests ``llm_turn``; a refused turn raises ``guardkit.TurnDenied``, a
``GuardStop`` that smolagents' ``except Exception`` lets through, so the run stops there (and so
does a terminated agent, at its next turn). When the policy caps ``llm_turn`` (``max_calls``),
the agent's ``max_steps`` is lowered to that cap. Tools added to ``agent.tools`` after ``guard``
are guarded at the next model turn, before the model can choose them. Managed agents (team
members) are guarded the same way, recursively, with the same agent guard.

Approvals: a call the policy sends for approval waits (``approval_timeout``) for a human in the
console or the CLI, in process. ``final_answer`` is the model handing back its answer, not an
action, and is left alone (``exempt``).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any

from ._adapter import require
from ._settings import CostFn, GuardSettings

require("smolagents", "smolagents")

from smolagents import MultiStepAgent, Tool  # noqa: E402 - after the check that names the extra

from guardkit.dispatch import call_tool  # noqa: E402
from guardkit.protocols import AgentGuard, KnowsPolicy  # noqa: E402
from guardkit.tools.turns import LLM_TURN, model_turn  # noqa: E402

__all__ = ["CostFn", "guard"]

#: Set on a tool object or a model whose calls already go through the guard.
_MARK = "_guardkit_guarded"
#: On a guarded tool or model: the settings of the latest ``guard`` call that took it.
_SETTINGS = "_guardkit_settings"


def guard(
    agent: MultiStepAgent,
    guard_agent: AgentGuard | None = None,
    *,
    costs: Mapping[str, CostFn] | None = None,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
    exempt: Collection[str] = ("final_answer",),
) -> MultiStepAgent:
    """Guard ``agent``'s tools and model turns in place and return it.

    ``guard_agent`` is any ``guardkit.AgentGuard`` (``LocalAgent``, ``AgentClient``); ``None``
    asks ``guardkit.current_agent()`` at each call. ``costs`` maps a tool name to the charge of
    a call from its arguments (else the policy's cost). Calling ``guard`` twice changes nothing.
    """
    settings = GuardSettings(
        "smolagents", guard_agent, dict(costs or {}), approval_timeout, poll, frozenset(exempt)
    )
    for member in _team(agent):
        _guard_tools(member, settings)
        _gate_model(member, settings)
        _cap_steps(member, guard_agent)
    return agent


def _team(agent: MultiStepAgent) -> Iterator[MultiStepAgent]:
    """``agent`` and every managed agent below it, each once."""
    seen: set[int] = set()
    todo = [agent]
    while todo:
        member = todo.pop()
        if id(member) in seen:
            continue
        seen.add(id(member))
        yield member
        todo.extend(m for m in getattr(member, "managed_agents", {}).values())


def _guard_tools(agent: MultiStepAgent, settings: GuardSettings) -> None:
    for name, tool in list(agent.tools.items()):
        if name not in settings.exempt and isinstance(tool, Tool):
            _guard_tool(tool, settings)


def _guard_tool(tool: Tool, settings: GuardSettings) -> None:
    """Hand ``tool``'s calls to the guard. A tool object guarded again (the same module-level
    tool in another agent) answers to the latest ``guard`` call's agent guard."""
    setattr(tool, _SETTINGS, settings)
    if getattr(tool, _MARK, False):
        return
    original = tool.forward
    names = _parameter_names(original, tool)
    name = tool.name

    @functools.wraps(original)
    def forward(*args: Any, **kwargs: Any) -> Any:
        if len(args) > len(names):
            raise TypeError(
                f"{name}() takes {len(names)} positional arguments but {len(args)} were given"
            )
        current: GuardSettings = getattr(tool, _SETTINGS)
        return call_tool(
            name,
            {**dict(zip(names, args, strict=False)), **kwargs},
            original,
            guard=current.agent(),
            cost=current.costs.get(name),
            approval_timeout=current.approval_timeout,
            poll=current.poll,
        )

    tool.forward = forward
    setattr(tool, _MARK, True)


def _parameter_names(forward: Callable[..., Any], tool: Tool) -> list[str]:
    """The names positional arguments of ``forward`` bind to (``tool.inputs``' order when the
    signature is ``*args, **kwargs``, as smolagents allows with signature validation off)."""
    try:
        parameters = inspect.signature(forward).parameters.values()
    except (TypeError, ValueError):
        return list(tool.inputs)
    positional = [
        p.name
        for p in parameters
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    return positional or list(tool.inputs)


def _gate_model(agent: MultiStepAgent, settings: GuardSettings) -> None:
    model = agent.model
    setattr(model, _SETTINGS, (agent, settings))
    if getattr(model, _MARK, False):
        return
    generate, stream = model.generate, getattr(model, "generate_stream", None)

    def turn() -> model_turn:
        owner, current = getattr(model, _SETTINGS)
        _guard_tools(owner, current)  # a tool added since the last turn, before it is chosen
        return model_turn(current.agent())

    def guarded_generate(*args: Any, **kwargs: Any) -> Any:
        with turn():
            return generate(*args, **kwargs)

    def guarded_stream(*args: Any, **kwargs: Any) -> Iterator[Any]:
        assert stream is not None
        with turn():
            yield from stream(*args, **kwargs)

    model.generate = functools.wraps(generate)(guarded_generate)
    if stream is not None:
        model.generate_stream = functools.wraps(stream)(guarded_stream)
    setattr(model, _MARK, True)


def _cap_steps(agent: MultiStepAgent, guard_agent: AgentGuard | None) -> None:
    """Lower ``max_steps`` to the policy's ``llm_turn`` cap, where the guard can tell it."""
    if not isinstance(guard_agent, KnowsPolicy):
        return
    rule = guard_agent.policy().tools.get(LLM_TURN)
    cap = rule.max_calls if rule is not None else None
    if cap is not None and cap < agent.max_steps:
        agent.max_steps = cap
