"""Tool calls through CrewAI's tool-call hooks: asked in the before hook, refused there, reported
in the after hook; the tool object's body tells which call ran, with what error."""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from crewai.hooks import InterceptionPoint, ToolCallHookContext
from crewai.hooks.dispatch import get_global_hook_list
from crewai.tools import BaseTool
from crewai.tools.base_tool import Tool
from crewai.tools.structured_tool import CrewStructuredTool

from guardkit.decisions import FaultName, Reason
from guardkit.dispatch import call_tool
from guardkit.errors import GuardError, InvalidInput, InvalidState, ToolDenied
from guardkit.protocols import AgentGuard
from guardkit.refusals import Refusal, refusal, refusal_or_stop
from guardkit.tools import enforce
from guardkit.tools.asking import settle
from guardkit.tools.binding import jsonable
from guardkit.tools.flow import Flow, drive, stops_on_failure
from guardkit.tools.handoff import guarded, running
from guardkit.tools.outcome import report

from ._settings import GuardSettings, settings_of
from ._turns import MARK, gate

__all__ = ["install_hooks"]

#: On a tool object whose function is already guarded by ``guardkit.tool`` (handed each call).
_HANDED_OFF = "_guardkit_handed_off"


@dataclass(slots=True, eq=False)
class _Call:
    """A call the before hook allowed, until its after hook has reported it."""

    settings: GuardSettings
    guard: AgentGuard
    #: None for a tool already guarded by ``guardkit.tool``: it asks the guard itself, once.
    action_id: str | None
    name: str
    arguments: dict[str, Any]
    #: Set by the tool's body when it runs for this call, and what it raised.
    ran: bool = False
    error: BaseException | None = None


#: Calls between their before and after hooks, by the identity of their input dict (CrewAI hands
#: the same dict to both hooks of a call; it is kept here so its id cannot be reused meanwhile).
_calls: dict[int, tuple[dict[str, Any], _Call | Refusal]] = {}
#: The allowed calls under way of each tool object, for its body to find (by ``id`` of the tool).
_open: dict[int, list[_Call]] = {}
_lock = threading.Lock()


def _before_tool_call(context: ToolCallHookContext) -> bool | None:
    settings = settings_of(context.agent)
    if settings is None or context.tool_name in settings.exempt:
        return None
    arguments = context.tool_input
    try:
        original, asked = _decide(context, settings)
    # CrewAI swallows what a hook raises and runs the tool (fail-open): refuse it instead.
    except Exception as exc:  # noqa: BLE001
        original, asked = None, _guard_broke(exc)
    if isinstance(asked, Refusal):
        _calls[id(arguments)] = (arguments, asked)
        return False
    call = _Call(settings, asked[0], asked[1], context.tool_name, dict(arguments))
    _calls[id(arguments)] = (arguments, call)
    if original is not None:
        with _lock:
            _open.setdefault(id(original), []).append(call)
    return None


def _decide(
    context: ToolCallHookContext, settings: GuardSettings
) -> tuple[BaseTool | None, tuple[AgentGuard, str | None] | Refusal]:
    """The tool object (its body wrapped) and the guard's answer: who allowed it under which
    action (``None``: a ``guardkit.tool`` function that asks itself), or the refusal."""
    if context.agent is not None:
        gate(context.agent)  # an LLM given to the agent since ``guard``, before it is called
    original = _wrap_tool(context.tool)
    if getattr(original, _HANDED_OFF, False):
        return original, (settings.agent(), None)
    return original, _ask(settings, context.tool_name, context.tool_input)


def _after_tool_call(context: ToolCallHookContext) -> str | None:
    found = _calls.pop(id(context.tool_input), None)
    if found is None:
        return None
    call = found[1]
    if isinstance(call, Refusal):
        return call.text
    original = _original(context.tool)
    with _lock:
        under_way = _open.get(id(original), [])
        if call in under_way:
            under_way.remove(call)
        if not under_way:
            _open.pop(id(original), None)
    if call.action_id is None:  # the guarded function reported its own outcome
        return None
    if call.error is not None:
        _report(call, "failure", f"{type(call.error).__name__}: {call.error}")
    elif call.ran or original is None:
        _report(call, "success")
    else:  # CrewAI answered without running it (its tool cache, a usage limit, another hook)
        _report(call, "failure", f"not run: CrewAI answered {_cut(context.tool_result)}", "caller")
    return None


def _cut(result: Any) -> str:
    text = str(result)
    return text if len(text) <= 200 else text[:200] + "..."


# -- the tool's body: what ran under which call ------------------------------------------------


def _original(tool: Any) -> BaseTool | None:
    """The tool object the agent holds, behind the ``CrewStructuredTool`` CrewAI made of it."""
    found = getattr(tool, "_original_tool", None) or tool
    return found if isinstance(found, BaseTool) else None


def _wrap_tool(tool: Any) -> BaseTool | None:
    """Put a bookkeeper around the body of ``tool`` (once): CrewAI calls it from its own runners
    (``run``, ``arun``, the structured tool's ``invoke``), so this is where a call is seen to
    run, with what error, and with ``guardkit.current_action_id()`` set."""
    original: Any = _original(tool)  # a BaseTool: Any to mypy where crewai is not installed
    if original is None:
        return None
    function_tool = isinstance(original, Tool)  # its run, _run, arun and _arun call self.func
    if not getattr(original, MARK, False):
        if function_tool:
            object.__setattr__(original, _HANDED_OFF, guarded(original.func))
            object.__setattr__(original, "func", _body(original, original.func))
        else:
            object.__setattr__(original, "_run", _body(original, original._run))
            object.__setattr__(original, "_arun", _body(original, original._arun))
        object.__setattr__(original, MARK, True)
    if isinstance(tool, CrewStructuredTool) and not getattr(tool, MARK, False):
        # A structured tool made before the bookkeeper holds the original's bound ``_run``.
        guarded_run = original._run
        if getattr(tool.func, "__self__", None) is original and not function_tool:
            object.__setattr__(tool, "func", guarded_run)
        object.__setattr__(tool, MARK, True)
    return original


def _body(owner: BaseTool, run: Callable[..., Any]) -> Callable[..., Any]:
    key = id(owner)

    def runs(*args: Any, **kwargs: Any) -> Any:
        call, again = _take(key, kwargs)
        if call is None:  # no guarded call of this tool under way: not ours (another crew's)
            return run(*args, **kwargs)
        if call.action_id is None:  # a guardkit.tool function: handed the call, it asks once
            return call_tool(
                call.name,
                inspect.signature(run).bind(*args, **kwargs).arguments,
                run,
                guard=call.guard,
                cost=call.settings.costs.get(call.name),
                approval_timeout=call.settings.approval_timeout,
                poll=call.settings.poll,
            )
        if again:  # CrewAI running the same call again (its retries): an action of its own
            return call_tool(
                call.name,
                kwargs,
                lambda **_: run(*args, **kwargs),
                guard=call.guard,
                cost=call.settings.costs.get(call.name),
                approval_timeout=call.settings.approval_timeout,
                poll=call.settings.poll,
            )
        try:
            with running(call.action_id):
                value = run(*args, **kwargs)
        except BaseException as exc:
            call.error = exc
            raise
        if inspect.isawaitable(value):
            return _awaited(call, value)
        return value

    if inspect.iscoroutinefunction(run):

        async def aruns(*args: Any, **kwargs: Any) -> Any:
            return await runs(*args, **kwargs)

        return functools.wraps(run)(aruns)
    return functools.wraps(run)(runs)


async def _awaited(call: _Call, value: Awaitable[Any]) -> Any:
    assert call.action_id is not None
    try:
        with running(call.action_id):
            return await value
    except BaseException as exc:
        call.error = exc
        raise


def _take(key: int, kwargs: Mapping[str, Any]) -> tuple[_Call | None, bool]:
    """The call this run of a tool body is for (the one with these arguments, else the oldest
    not yet run), and whether that call had run already."""
    with _lock:
        under_way = _open.get(key, [])
        waiting = [c for c in under_way if not c.ran]
        if not waiting:
            return (under_way[-1], True) if under_way else (None, False)
        call = next((c for c in waiting if c.arguments == dict(kwargs)), waiting[0])
        call.ran = True
        return call, False


def _ask(
    settings: GuardSettings, name: str, arguments: dict[str, Any]
) -> tuple[AgentGuard, str] | Refusal:
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
    return asked if isinstance(asked, Refusal) else (agent, asked)


def _asking(
    agent: AgentGuard, settings: GuardSettings, name: str, arguments: dict[str, Any], cost: Any
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


def _report(call: _Call, status: str, detail: str = "", fault: FaultName = "agent") -> None:
    assert call.action_id is not None  # a handed-off call is reported by its guarded function
    # InvalidState: an operator already recorded this action's outcome.
    with contextlib.suppress(InvalidState), stops_on_failure("tool call outcome"):
        drive(report(call.action_id, status, detail, fault), call.guard)


def install_hooks() -> None:
    """Register the two tool hooks once for the process: ours last among the before hooks (so
    the guard sees the arguments as they will run) and first among the after hooks (so it reads
    the result as CrewAI made it)."""
    with _lock:
        before = get_global_hook_list(InterceptionPoint.PRE_TOOL_CALL)
        after = get_global_hook_list(InterceptionPoint.POST_TOOL_CALL)
        for hooks, hook in ((before, _before_tool_call), (after, _after_tool_call)):
            while hook in hooks:
                hooks.remove(hook)
        before.append(_before_tool_call)
        after.insert(0, _after_tool_call)
