"""Guard OpenAI Agents SDK runs: model turns through run hooks, tool calls through tool guardrails.

Example::

    from agents import Agent, Runner
    from guardkit.plugins.openai_agents import GuardHooks, guard_tools

    sdk_agent = guard_tools(Agent(name="ops", tools=[restart_service, read_logs]), guard)
    result = await Runner.run(sdk_agent, "The API is down.", hooks=GuardHooks(guard))

* ``GuardHooks(agent=None)`` (``RunHooks``) requests ``llm_turn`` in ``on_llm_start``, before every
  model call, and reports the turn ``success`` in ``on_llm_end`` (``usage: N tokens``). A refused
  turn (budget or turn cap spent, agent terminated, rate limit) raises ``guardkit.TurnDenied`` from
  the hook: the model is not called and ``Runner.run`` raises it. ``TurnDenied`` derives from
  ``BaseException``, so ``except Exception`` in the SDK and in your code lets it through.
* ``guard_tools(agent_or_tools, agent=None)`` guards every ``FunctionTool`` of an SDK agent (and
  of the agents in its ``handoffs``) in place, including tools nobody decorated. A tool input
  guardrail, added last to each tool's ``tool_input_guardrails``, requests the call (its JSON
  arguments are the input) and waits for a human on ``pending_approval``; a refusal is the
  guardrail's ``reject_content`` message, ``guardkit.refusal(...).text``, so the tool never runs
  and the model reads the denial sentence. The tool then runs and its outcome is reported:
  ``success``, or ``failure`` with ``"ExcType: message"`` (a minor scar) when it raised. A tool
  already guarded by ``guardkit.tool`` / ``agent.tool`` is handed the call instead
  (``guardkit.tools.handoff``): it asks the guard itself, once, and its denial reaches the model
  as the same sentence, never as the SDK's "An error occurred while running the tool".
* ``resolve_interruptions(result, agent=None)`` answers the SDK's ``needs_approval``
  interruptions with guardkit decisions: each interrupted call is requested (one action, pending
  until a human approves or rejects it in the console or with ``guardkit approve``/``reject``) and
  the answer approves or rejects the interruption (a rejection carries the denial sentence).
  Resume with the state it returns; the approved call then runs under that same action.

Tools other than ``FunctionTool`` (hosted tools, MCP servers' tools, shell, computer) are not
gated here; guard an MCP server with ``guardkit mcp proxy``.

SDK seams used: ``RunHooks.on_llm_start``/``on_llm_end``; ``FunctionTool.tool_input_guardrails``
with ``ToolInputGuardrail`` and ``ToolGuardrailFunctionOutput.allow``/``reject_content``;
``FunctionTool.on_invoke_tool`` (wrapped, to run and report); ``ToolContext.is_tool_approved``;
``RunResult.interruptions``, ``to_state()``, ``RunState.approve``/``reject(rejection_message=)``;
and one SDK-internal pair, ``agents.tool.resolve_function_tool_failure_error_function`` and
``set_function_tool_failure_error_function``, to see a tool's exception before the SDK words it
(the tool's own ``failure_error_function`` still words real failures).
"""

from __future__ import annotations

from .._adapter import require

try:
    import agents  # noqa: F401 - first, so that a missing SDK names the extra to install
except ImportError:  # the SDK is the optional extra ``openai-agents``
    require("agents", "openai-agents")
    raise

from ._approvals import resolve_interruptions
from ._hooks import GuardHooks, guard_tools
from ._tools import GUARDRAIL_NAME

__all__ = ["GUARDRAIL_NAME", "GuardHooks", "guard_tools", "resolve_interruptions"]

for _name in __all__:
    _obj = globals()[_name]
    if hasattr(_obj, "__module__") and callable(_obj):
        _obj.__module__ = __name__
del _name, _obj
