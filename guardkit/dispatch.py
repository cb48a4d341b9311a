"""``guardkit.call_tool``: run one tool call the model chose, under the guard, at the dispatch site.

A hand-written agent runs the model's choice itself: ``TOOLS[name](**args)``,
``handlers.get(block.name)(**block.input)``, ``tools[name].execute(**args)``. Hand that call to
guardkit instead; the guard is asked first, and a refusal comes back as the tool's result::

    result = guardkit.call_tool(call.function.name, call.function.arguments, TOOLS.get(name))
    result = await guardkit.acall_tool(block.name, block.input, tools[block.name].execute)

``arguments`` is a dict or the model's JSON text. The call is requested with the parsed
arguments (one action), runs only when allowed, and its outcome is reported (``success``, or
``failure`` with the exception, which is raised on as before). A refusal (a denial, a rejection,
an approval that timed out, arguments that are not JSON, an unknown tool) returns the sentence
for the model (``guardkit.refusal(...).text``: "... Nothing was done. Do not retry ...") unless
``on_refusal`` shapes it as the host's results are shaped (a dict, MCP content blocks).
A guard that cannot be asked or cannot record raises ``GuardFailed`` (its store or server failed)
or ``NoAgentConfigured``, both ``GuardStop``s that an ``except Exception`` lets through: the model
is never told about the guard's own failures.

A tool already guarded (``@guardkit.tool``, ``agent.tool``) is handed the call: it asks the guard
itself, once, with its own checks and cost, and its refusal becomes the result the same way.
"""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, overload

from guardkit import _semconv as sc
from guardkit import tracing
from guardkit.decisions import DecisionDict, JSONObject, Reason
from guardkit.errors import (
    ActionDenied,
    ApprovalTimeout,
    GuardError,
    InvalidInput,
    InvalidState,
    ToolDenied,
)
from guardkit.protocols import AgentGuard
from guardkit.refusals import Refusal, refusal
from guardkit.tools import enforce
from guardkit.tools.asking import settle
from guardkit.tools.binding import jsonable
from guardkit.tools.flow import Flow, Op, adrive, drive, stops_on_failure
from guardkit.tools.handoff import guarded, handoff, running
from guardkit.tools.scope import current_agent

__all__ = ["acall_tool", "call_tool"]

T = TypeVar("T")
U = TypeVar("U")

#: The deny-style codes of a call that never reached the guard (the model's own mistakes).
INVALID_ARGUMENTS = "invalid_arguments"
UNKNOWN_TOOL = "unknown_tool"

Arguments = Mapping[str, Any] | str | bytes | bytearray | None
Cost = int | float | Callable[[dict[str, Any]], Any] | None


def _mistake(code: str, text: str) -> Refusal:
    reason: Reason = {"code": code, "message": text}
    return Refusal(text=text, code=code, reason=reason)


def _parse(name: str, arguments: Arguments) -> JSONObject | Refusal:
    """The model's arguments as a dict, or why they cannot be used (nothing asked, nothing run)."""
    if arguments is None:
        return {}
    if isinstance(arguments, Mapping):
        return dict(arguments)
    try:
        parsed = json.loads(arguments) if arguments.strip() else {}
    except (ValueError, UnicodeDecodeError) as exc:
        problem = f"they are not valid JSON ({exc})"
    else:
        if isinstance(parsed, dict):
            return parsed
        problem = f"they are a JSON {type(parsed).__name__}, not an object"
    return _mistake(
        INVALID_ARGUMENTS,
        f"Error: the arguments for tool {name!r} could not be used: {problem}. Nothing was done; "
        "call the tool again with arguments that match its schema.",
    )


def _unknown(name: str) -> Refusal:
    return _mistake(
        UNKNOWN_TOOL,
        f"Error: there is no tool named {name!r}. Nothing was done; use a listed tool.",
    )


def _shape(found: Refusal, on_refusal: Callable[[Refusal], Any] | None) -> Any:
    return found.text if on_refusal is None else on_refusal(found)


def _handed_refusal(exc: BaseException, decision: str | None) -> Refusal | None:
    """The refusal of a guarded tool's own request (not of a call nested in its body)."""
    if decision == "allowed" or not isinstance(exc, (ActionDenied, ApprovalTimeout)):
        return None
    return refusal(exc)


def _asked(
    agent: AgentGuard,
    name: str,
    arguments: JSONObject,
    cost: Cost,
    approval_timeout: float,
    poll: float,
    span: Any,
) -> Flow[DecisionDict | Refusal]:
    """Request the call and wait for a human if need be: the allowed decision, or a refusal."""
    charge = cost(arguments) if callable(cost) else cost
    try:
        # The policy's declared checks (paths, egress, provenance, the reserved key) first, as on
        # every other way in: a failed one is a recorded denial, and nothing runs.
        call = yield from enforce.checked(agent, name, arguments, jsonable(arguments))
        decision = yield from enforce.request(name, call, charge)
    except ToolDenied as exc:
        span.fail(sc.ERR_DENIED, "denied")
        denied = refusal(exc)
        assert denied is not None
        return denied
    except InvalidInput as exc:  # the model's input cannot be recorded as it is (too large...)
        return _mistake(INVALID_ARGUMENTS, f"Error: {exc.message}. Nothing was done.")
    span.decision(decision, agent_id=agent.agent_id)
    decision = yield from settle(
        agent, decision, approval_timeout=approval_timeout, poll=poll, span=span
    )
    if decision["decision"] != "allowed":
        found = refusal(decision)
        assert found is not None
        span.fail(sc.ERR_DENIED, "denied")
        return found
    return decision


def _outcome(action_id: str, exc: BaseException | None) -> Flow[None]:
    if exc is None:
        yield Op("report", (action_id, "success"))
        return
    try:
        # A monitor holding the operator side may have recorded this action's outcome already.
        with contextlib.suppress(InvalidState):
            yield Op("report", (action_id, "failure", f"{type(exc).__name__}: {exc}"))
    except GuardError as report_error:
        exc.add_note(f"guardkit could not report the failure: {report_error}")


async def _run_later(value: Awaitable[T], agent: AgentGuard, action_id: str) -> T:
    """An awaitable a sync dispatch got back (an ``async def`` tool): run and report it."""
    try:
        with running(action_id):
            result = await value
    except BaseException as exc:
        await adrive(_outcome(action_id, exc), agent)
        raise
    with stops_on_failure("tool call"):
        await adrive(_outcome(action_id, None), agent)
    return result


async def _handed_later(
    value: Awaitable[Any],
    guard: AgentGuard | None,
    cost: Cost,
    call_id: str | None,
    on_refusal: Callable[[Refusal], Any] | None,
) -> Any:
    """A guarded ``async def`` tool a sync dispatch called: it asks the guard when awaited."""
    with handoff(agent=guard, cost=cost, call_id=call_id) as taken:
        try:
            return await value
        except BaseException as exc:
            found = _handed_refusal(exc, taken.decision)
            if found is None:
                raise
            return _shape(found, on_refusal)


@overload
def call_tool(
    name: str,
    arguments: Arguments,
    tool: Callable[..., T] | None,
    *,
    guard: AgentGuard | None = None,
    cost: Cost = None,
    on_refusal: None = None,
    call_id: str | None = None,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
) -> T | str: ...


@overload
def call_tool(
    name: str,
    arguments: Arguments,
    tool: Callable[..., T] | None,
    *,
    guard: AgentGuard | None = None,
    cost: Cost = None,
    on_refusal: Callable[[Refusal], U],
    call_id: str | None = None,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
) -> T | U: ...


def call_tool(
    name: str,
    arguments: Arguments,
    tool: Callable[..., Any] | None,
    *,
    guard: AgentGuard | None = None,
    cost: Cost = None,
    on_refusal: Callable[[Refusal], Any] | None = None,
    call_id: str | None = None,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
) -> Any:
    """Run the model's call of ``name`` with ``arguments`` through ``tool``, if the guard allows.

    Returns what ``tool`` returns, or the refusal's text (``on_refusal(refusal)`` when given).
    ``guard`` defaults to ``guardkit.current_agent()`` (``use_agent``, or ``GUARDKIT_AGENT``...);
    ``cost`` is a number or a function of the parsed arguments. A tool that raises is reported
    ``failure`` and its exception raised on. An ``async def`` tool gives back an awaitable that
    runs and reports it (``acall_tool`` awaits it).

    >>> guardkit.call_tool("search", '{"q": "invoices"}', TOOLS.get("search"))
    'results for invoices'
    """
    parsed = _parse(name, arguments)
    if isinstance(parsed, Refusal):
        return _shape(parsed, on_refusal)
    if tool is None:
        return _shape(_unknown(name), on_refusal)
    if guarded(tool):
        with handoff(agent=guard, cost=cost, call_id=call_id) as taken:
            try:
                value = tool(**parsed)
            except BaseException as exc:
                found = _handed_refusal(exc, taken.decision)
                if found is None:
                    raise
                return _shape(found, on_refusal)
        if inspect.isawaitable(value) and not taken.taken:
            return _handed_later(value, guard, cost, call_id, on_refusal)
        return value
    agent = guard if guard is not None else current_agent()
    with tracing.tool_span(
        name, agent_id=agent.agent_id, call_id=call_id, arguments=parsed
    ) as span:
        with stops_on_failure(f"tool call {name!r}"):
            asked = drive(_asked(agent, name, parsed, cost, approval_timeout, poll, span), agent)
        if isinstance(asked, Refusal):
            return _shape(asked, on_refusal)
        action_id = asked["action_id"]
        try:
            with running(action_id):
                value = tool(**parsed)
        except BaseException as exc:
            span.fail(sc.ERR_TOOL_ERROR, "the tool raised")
            drive(_outcome(action_id, exc), agent)
            raise
        if inspect.isawaitable(value):
            return _run_later(value, agent, action_id)
        with stops_on_failure(f"tool call {name!r}"):
            drive(_outcome(action_id, None), agent)
        span.result(value)
        return value


@overload
async def acall_tool(
    name: str,
    arguments: Arguments,
    tool: Callable[..., Awaitable[T]] | None,
    *,
    guard: AgentGuard | None = None,
    cost: Cost = None,
    on_refusal: None = None,
    call_id: str | None = None,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
) -> T | str: ...


@overload
async def acall_tool(
    name: str,
    arguments: Arguments,
    tool: Callable[..., Awaitable[T]] | None,
    *,
    guard: AgentGuard | None = None,
    cost: Cost = None,
    on_refusal: Callable[[Refusal], U],
    call_id: str | None = None,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
) -> T | U: ...


@overload
async def acall_tool(
    name: str,
    arguments: Arguments,
    tool: Callable[..., T] | None,
    *,
    guard: AgentGuard | None = None,
    cost: Cost = None,
    on_refusal: None = None,
    call_id: str | None = None,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
) -> T | str: ...


@overload
async def acall_tool(
    name: str,
    arguments: Arguments,
    tool: Callable[..., T] | None,
    *,
    guard: AgentGuard | None = None,
    cost: Cost = None,
    on_refusal: Callable[[Refusal], U],
    call_id: str | None = None,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
) -> T | U: ...


async def acall_tool(
    name: str,
    arguments: Arguments,
    tool: Callable[..., Any] | None,
    *,
    guard: AgentGuard | None = None,
    cost: Cost = None,
    on_refusal: Callable[[Refusal], Any] | None = None,
    call_id: str | None = None,
    approval_timeout: float = 300.0,
    poll: float = 2.0,
) -> Any:
    """``call_tool`` from ``async`` code: the guard is asked through its async API (the event
    loop never waits on a fsync, the network or a human) and an ``async def`` tool is awaited.
    A sync tool runs where it ran before, on the event loop's thread.

    >>> await guardkit.acall_tool(block.name, block.input, tools[block.name].execute)
    """
    parsed = _parse(name, arguments)
    if isinstance(parsed, Refusal):
        return _shape(parsed, on_refusal)
    if tool is None:
        return _shape(_unknown(name), on_refusal)
    if guarded(tool):
        with handoff(agent=guard, cost=cost, call_id=call_id) as taken:
            try:
                value = tool(**parsed)
                if inspect.isawaitable(value):
                    value = await value
            except BaseException as exc:
                found = _handed_refusal(exc, taken.decision)
                if found is None:
                    raise
                return _shape(found, on_refusal)
        return value
    agent = guard if guard is not None else current_agent()
    with tracing.tool_span(
        name, agent_id=agent.agent_id, call_id=call_id, arguments=parsed
    ) as span:
        with stops_on_failure(f"tool call {name!r}"):
            asked = await adrive(
                _asked(agent, name, parsed, cost, approval_timeout, poll, span), agent
            )
        if isinstance(asked, Refusal):
            return _shape(asked, on_refusal)
        action_id = asked["action_id"]
        try:
            with running(action_id):
                value = tool(**parsed)
                if inspect.isawaitable(value):
                    value = await value
        except BaseException as exc:
            span.fail(sc.ERR_TOOL_ERROR, "the tool raised")
            await adrive(_outcome(action_id, exc), agent)
            raise
        with stops_on_failure(f"tool call {name!r}"):
            await adrive(_outcome(action_id, None), agent)
        span.result(value)
        return value
