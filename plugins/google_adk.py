"""Guard a Google ADK app: every model call and every tool call of every agent asks the guard.

One plugin for the whole app, first in the ``App``'s plugins::

    from google.adk.apps import App
    from google.adk.runners import InMemoryRunner
    from guardkit.plugins.google_adk import GuardPlugin

    app = App(name="support", root_agent=root_agent, plugins=[GuardPlugin(guard.agent("bot"))])
    runner = InMemoryRunner(app=app)

or ``guard(app_or_runner, guard.agent("bot"))`` to put it first in an existing ``App`` or
runner. ``agent`` is any
``guardkit.AgentGuard`` (``LocalAgent``, ``AgentClient``); ``None`` asks
``guardkit.current_agent()`` at each call. Plugins reach every agent of the runner: sub-agents,
agents of workflow agents, and the nested runs of agents used as tools (``AgentTool``).

Model calls: ``before_model_callback`` requests ``llm_turn``; a refused turn raises
``guardkit.TurnDenied`` (a ``GuardStop``, not an ``Exception``) out of the run before the model
is called. The turn is reported ``success`` at the model's final (non-partial) response, or
``failure`` with ``fault="upstream"`` when the model call raises.

Tool calls: ``before_tool_callback`` runs the policy's declared checks (``paths``, ``egress``,
provenance) and requests the call with its arguments; a call the guard sends for approval waits
for a human (``approval_timeout``) without blocking the event loop. A refusal is the call's
response, ``{"error": "... Nothing was done. Do not retry ..."}``, and the tool does not run.
An allowed call is reported ``success`` in ``after_tool_callback``, ``failure`` with
``"ExcType: message"`` in ``on_tool_error_callback`` (your own error callbacks still run after),
and ``failure`` with ``fault="caller"`` when the call is cancelled (no scar).

ADK's own confirmation (``require_confirmation``, ``tool_context.request_confirmation()``)
comes first: a call ADK will pause for is requested from the guard only once the user has
confirmed it, so it is one action, charged once.

Refused at the start of a run (``guardkit.PolicyError``), because the guard could not see or stop
what they run: provider-side tools in a model request (``google_search``, ``code_execution``,
``url_context``, ``mcp_servers``..., anything but function declarations and computer use), an
agent with a code executor (model-written code runs outside any tool call), an ``AgentTool`` with
``include_plugins=False`` (its nested run would not carry the guard), and a runner where another
plugin comes before this one (a plugin that answers first would hide a call from the guard).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from ._adapter import require

require("google.adk", "google-adk")

from google.adk.agents import BaseAgent, LlmAgent  # noqa: E402
from google.adk.agents.callback_context import CallbackContext  # noqa: E402
from google.adk.agents.invocation_context import InvocationContext  # noqa: E402
from google.adk.apps import App  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.plugins.base_plugin import BasePlugin  # noqa: E402
from google.adk.runners import Runner  # noqa: E402
from google.adk.tools.agent_tool import AgentTool  # noqa: E402
from google.adk.tools.base_tool import BaseTool  # noqa: E402
from google.adk.tools.tool_context import ToolContext  # noqa: E402
from google.genai import types  # noqa: E402
from pydantic_core import to_jsonable_python  # noqa: E402

from guardkit.decisions import DecisionDict, FaultName  # noqa: E402
from guardkit.errors import GuardError, InvalidState, PolicyError, TurnDenied  # noqa: E402
from guardkit.protocols import AgentGuard  # noqa: E402
from guardkit.refusals import Refusal, refusal, refusal_or_stop  # noqa: E402
from guardkit.tools import enforce  # noqa: E402
from guardkit.tools.asking import settle  # noqa: E402
from guardkit.tools.enforce import checked  # noqa: E402
from guardkit.tools.flow import Flow, Op, adrive  # noqa: E402
from guardkit.tools.outcome import report  # noqa: E402
from guardkit.tools.scope import current_agent  # noqa: E402
from guardkit.tools.shield import shielded  # noqa: E402
from guardkit.tools.turns import LLM_TURN  # noqa: E402

__all__ = ["CostFn", "GuardPlugin", "guard"]

AppOrRunner = TypeVar("AppOrRunner", App, Runner)
#: Computes a call's charge from its arguments (never trust a cost the model states).
CostFn = Callable[[Mapping[str, Any]], Any]
#: Fields of a model request's ``types.Tool`` that ADK runs here, as function calls it executes:
#: every other field is a tool the model provider runs itself.
_LOCAL_TOOL_FIELDS = frozenset({"function_declarations", "computer_use"})
#: A refusal's or a check's detail in the ledger is kept to this many characters.


class GuardPlugin(BasePlugin):
    """An ADK plugin that requests every model turn and tool call from a guardkit guard.

    >>> App(name="support", root_agent=root_agent, plugins=[GuardPlugin(guard.agent("bot"),
    ...     costs={"pay": lambda args: args["amount"]})])
    """

    def __init__(
        self,
        agent: AgentGuard | None = None,
        *,
        costs: Mapping[str, CostFn] | None = None,
        approval_timeout: float = 600,
        poll: float = 2.0,
        name: str = "guardkit",
    ) -> None:
        super().__init__(name=name)
        self.agent = agent
        self.costs = dict(costs or {})
        self.approval_timeout = approval_timeout
        self.poll = poll
        #: The allowed ``llm_turn`` of each model call under way, by its callback actions.
        self._turns: dict[int, tuple[AgentGuard, str]] = {}
        #: The allowed action of each tool call under way, by its function call id.
        self._calls: dict[str, tuple[AgentGuard, str]] = {}

    def _guard(self, site: str) -> AgentGuard:
        return self.agent if self.agent is not None else current_agent(site)

    # -- the run -----------------------------------------------------------------------------

    async def before_run_callback(self, *, invocation_context: InvocationContext) -> None:
        plugins = invocation_context.plugin_manager.plugins
        problems = [] if plugins and plugins[0] is self else [_not_first(plugins)]
        node = invocation_context.agent
        problems += _unguardable(node.root_agent) if isinstance(node, BaseAgent) else []
        if problems:
            raise PolicyError(problems)

    # -- model calls -------------------------------------------------------------------------

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        _no_provider_tools(llm_request)
        guard = self._guard("model turn")
        decision = await adrive(_turn(), guard)
        self._turns[id(callback_context.actions)] = (guard, decision["action_id"])
        return None

    async def after_model_callback(
        self, *, callback_context: CallbackContext, llm_response: LlmResponse
    ) -> LlmResponse | None:
        if llm_response.partial:  # a fragment of a streamed answer: the turn goes on
            return None
        started = self._turns.pop(id(callback_context.actions), None)
        if started is not None:
            usage = llm_response.usage_metadata
            tokens = usage.total_token_count if usage is not None else None
            detail = f"usage: {tokens} tokens" if tokens else ""
            await _report(started, "success", detail)
        return None

    async def on_model_error_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest, error: Exception
    ) -> LlmResponse | None:
        started = self._turns.pop(id(callback_context.actions), None)
        if started is not None:  # the model's provider failed: not the agent's fault
            await _report(started, "failure", _describe(error), "upstream")
        return None

    # -- tool calls --------------------------------------------------------------------------

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        if await _adk_asks_first(tool, tool_args, tool_context):
            return None  # ADK pauses for its user; the guard is asked when the call resumes
        guard = self._guard("tool call")
        cost_fn = self.costs.get(tool.name)
        cost = cost_fn(tool_args) if cost_fn is not None else None
        arguments = to_jsonable_python(tool_args, fallback=repr)
        try:
            asked = await adrive(
                _ask(guard, tool.name, arguments, cost, self.approval_timeout, self.poll), guard
            )
        except GuardError as exc:
            found = refusal_or_stop(exc, "tool call")
            if found is None:
                raise
            asked = found
        if isinstance(asked, Refusal):
            return {"error": asked.text}
        self._calls[_call_key(tool_context)] = (guard, asked)
        return None

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        started = self._calls.pop(_call_key(tool_context), None)
        if started is not None:
            await _report(started, "success")
        return None

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: BaseException,
    ) -> dict[str, Any] | None:
        started = self._calls.pop(_call_key(tool_context), None)
        if started is not None:
            if isinstance(error, asyncio.CancelledError):
                await _report(started, "failure", "cancelled before it finished", "caller")
            else:
                await _report(started, "failure", _describe(error))
        return None  # the error goes on to the agent's own error callbacks, as without us


def guard(
    app: AppOrRunner,
    agent: AgentGuard | None = None,
    *,
    costs: Mapping[str, CostFn] | None = None,
    approval_timeout: float = 600,
    poll: float = 2.0,
) -> AppOrRunner:
    """Put a ``GuardPlugin`` first in an ``App``'s (or a runner's) plugins and return it; one
    that already has a guard keeps it (calling ``guard`` twice changes nothing).

    Raises ``guardkit.PolicyError`` at once for agents the guard could not see into (a code
    executor, an ``AgentTool`` without plugins); provider-side tools are refused at the first
    model request, where ADK puts them.
    """
    root = app.root_agent if isinstance(app, App) else app.agent
    problems = _unguardable(root) if isinstance(root, BaseAgent) else []
    if problems:
        raise PolicyError(problems)
    plugins = app.plugins if isinstance(app, App) else app.plugin_manager.plugins
    if not any(isinstance(plugin, GuardPlugin) for plugin in plugins):
        plugin = GuardPlugin(agent, costs=costs, approval_timeout=approval_timeout, poll=poll)
        plugins.insert(0, plugin)
    return app


# -- asking and reporting --------------------------------------------------------------------


def _turn() -> Flow[DecisionDict]:
    decision: DecisionDict = yield Op("request", (LLM_TURN, {}))
    if decision["decision"] != "allowed":
        raise TurnDenied(decision["action_id"], decision.get("reason") or {"code": "denied"})
    return decision


def _ask(
    agent: AgentGuard,
    name: str,
    arguments: dict[str, Any],
    cost: Any,
    approval_timeout: float,
    poll: float,
) -> Flow[str | Refusal]:
    """Check the declared rules, request, wait for a human: the action id, or the refusal."""
    call = yield from checked(agent, name, arguments)
    decision = yield from enforce.request(name, call, cost)
    decision = yield from settle(agent, decision, approval_timeout=approval_timeout, poll=poll)
    if decision["decision"] == "allowed":
        return decision["action_id"]
    found = refusal(decision)
    assert found is not None
    return found


async def _report(
    started: tuple[AgentGuard, str], status: str, detail: str = "", fault: FaultName = "agent"
) -> None:
    """Report a call's one outcome, whatever cancels the task reporting it."""
    guard, action_id = started
    with contextlib.suppress(InvalidState):  # an operator already recorded its outcome
        await shielded(adrive(report(action_id, status, detail, fault), guard))


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _call_key(tool_context: ToolContext) -> str:
    return tool_context.function_call_id or f"context-{id(tool_context)}"


async def _adk_asks_first(tool: BaseTool, args: dict[str, Any], tool_context: ToolContext) -> bool:
    """Whether ADK's confirmation gate will pause this call for its user before it runs."""
    if tool_context.tool_confirmation is not None:
        return False  # resumed: the user has answered; the guard decides now
    return await tool.check_require_confirmation(args, tool_context) is True


# -- what the guard cannot see: refused at start ---------------------------------------------


def _no_provider_tools(llm_request: LlmRequest) -> None:
    """Refuse tools the model provider (or the genai client, for Python callables and MCP
    sessions handed to it) runs itself: no guard sees or stops those calls."""
    found: set[str] = set()
    for tool in (llm_request.config.tools if llm_request.config else None) or []:
        if not isinstance(tool, types.Tool):  # a callable or an MCP session: the SDK runs it
            found.add(type(tool).__name__)
            continue
        for field, value in tool:
            if value is not None and field not in _LOCAL_TOOL_FIELDS:
                found.add(field)
    if found:
        names = ", ".join(sorted(found))
        raise PolicyError(
            [
                (
                    "tools",
                    f"{names} run on the model provider's side, where the guard cannot see or "
                    "stop a call; remove them from the agent (and any built-in code executor) "
                    "or give it a function tool the guard can check instead",
                )
            ]
        )


def _not_first(plugins: list[BasePlugin]) -> tuple[str, str]:
    names = ", ".join(repr(plugin.name) for plugin in plugins)
    return (
        "plugins",
        f"the guardkit plugin must come first in the runner's plugins (they are {names}): a "
        "plugin before it that answers a call would hide it from the guard; use "
        "guardkit.plugins.google_adk.guard(runner, agent) or put GuardPlugin first",
    )


def _unguardable(root: BaseAgent) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for agent in _agents(root):
        if isinstance(agent, LlmAgent) and agent.code_executor is not None:
            problems.append(
                (
                    f"agents.{agent.name}.code_executor",
                    f"{type(agent.code_executor).__name__} runs model-written code outside "
                    "any tool call, where the guard cannot check it; remove it, or give the "
                    "agent a function tool that runs code and that the guard can gate",
                )
            )
        for tool in agent.tools if isinstance(agent, LlmAgent) else []:
            if isinstance(tool, AgentTool) and not tool.include_plugins:
                problems.append(
                    (
                        f"agents.{agent.name}.tools.{tool.name}",
                        "an AgentTool with include_plugins=False runs its agent without the "
                        "guard; leave include_plugins at True",
                    )
                )
    return problems


def _agents(root: BaseAgent) -> Iterator[BaseAgent]:
    """Every agent a run of ``root`` can reach: sub-agents and agents used as tools."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        agent = stack.pop()
        if id(agent) in seen:
            continue
        seen.add(id(agent))
        yield agent
        stack.extend(agent.sub_agents)
        if isinstance(agent, LlmAgent):
            stack.extend(t.agent for t in agent.tools if isinstance(t, AgentTool))
