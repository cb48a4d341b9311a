"""``llm_turn`` on the agent's LLM object: CrewAI's after-LLM hook never sees a turn that asks for
tools, so the turn is gated (and reported) around the LLM's own ``call`` and ``acall``."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from crewai.agents.agent_builder.base_agent import BaseAgent
from crewai.llms.base_llm import BaseLLM

from guardkit.tools.turns import model_turn

from ._settings import GuardSettings, settings_of

__all__ = ["MARK", "gate"]

#: Set on an LLM object (its ``id``, as copies carry it too) or a tool object whose calls already
#: go through the guard.
MARK = "_guardkit_guarded"
#: ``from_agent``'s position in ``BaseLLM.call(messages, tools, callbacks, available_functions,
#: from_task, from_agent, ...)``, for a caller that passes it positionally.
_FROM_AGENT = 5


def gate(agent: BaseAgent) -> None:
    """Gate the agent's LLMs (one may have been set or replaced since the last ``guard``)."""
    fields = vars(agent)  # not getattr: reading the deprecated function_calling_llm warns
    for name in ("llm", "function_calling_llm"):
        llm = fields.get(name)
        if isinstance(llm, BaseLLM) and getattr(llm, MARK, None) != id(llm):
            _gate_llm(llm)


def _caller(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> GuardSettings | None:
    owner = kwargs.get("from_agent", args[_FROM_AGENT] if len(args) > _FROM_AGENT else None)
    return settings_of(owner)


def _gate_llm(llm: BaseLLM) -> None:
    if getattr(llm, MARK, None) is not None:
        # A copy of a gated LLM (``Agent.copy`` makes shallow ones): its own methods, not those
        # of the LLM it was copied from, get the gate.
        for name in ("call", "acall", MARK):
            vars(llm).pop(name, None)
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
    object.__setattr__(llm, MARK, id(llm))
