"""The guarding proxy: an MCP server that forwards to an upstream one, asking the guard first.

::

    upstream = StdioServerParameters(command="node", args=["server.js"])
    async with GuardProxy(agent, upstream) as proxy:
        await proxy.serve_stdio()        # or: await proxy.serve_http("127.0.0.1", 8765)

Built on the SDK's low-level ``Server``: its handlers forward ``tools/list``, ``resources/*``,
``prompts/*`` and ``completion/complete`` upstream (only those the upstream serves), the
listings vetted and pinned (``vetting``, ``listings``) with the upstream's instructions, and
``tools/call`` goes through the guard (``calls.ask``), then upstream, then ``report``.
``notifications/*/list_changed`` and ``resources/updated`` from the upstream reach every client:
on handshake-era connections as notifications, on 2026-era ones through
``subscriptions/listen``.
"""

from __future__ import annotations

import logging
import sys
from collections import deque
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
import anyio.abc
from mcp import types
from mcp.server import InitializationOptions, NotificationOptions, Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.session import ServerSession
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from guardkit.decisions import Reason
from guardkit.errors import GuardError, PolicyError
from guardkit.policy import Policy
from guardkit.protocols import AgentGuard, KnowsPolicy
from guardkit.tools.enforce import unenforceable
from guardkit.tools.flow import adrive

from .calls import (
    DEFAULT_CALLS,
    TOOL_CHANGED,
    CallPolicy,
    ask,
    deny_held,
    deny_name,
    error_result,
    outcome,
    refused,
    report,
)
from .listings import Listing
from .names import NAME_MAX, reserved
from .pin_records import PinRecord, can_record, record_pin
from .pins import Kind, PinFile
from .results import Results, shown
from .schemas import ToolSchemas
from .stdio import serve_stdio
from .upstream import DEFAULT_START_TIMEOUT, Target, Upstream, describe
from .vetting import OnChange, Vetting

__all__ = ["DEFAULT_CALL_TIMEOUT", "GuardProxy", "OnChange", "Results", "Unlisted", "reserved"]

log = logging.getLogger("guardkit.mcp")

#: Seconds an upstream request may take by default before it fails (``--call-timeout``).
DEFAULT_CALL_TIMEOUT = 120.0
_SERVER_NAME_MAX = 64
#: Seconds between looks at the pin file while a tool is held (for an accept elsewhere).
_PIN_POLL = 1.0
#: Handshake-era connections remembered for notifications (the oldest are dropped first).
_MAX_SESSIONS = 1024


class Unlisted(StrEnum):
    """What clients see of upstream tools the agent's policy does not list."""

    #: Left out of ``tools/list`` (the default): the model never sees a tool it may not use.
    #: A client that calls one anyway is still asked about, and denied, by the guard.
    HIDE = "hide"
    #: Listed as the upstream lists them; every call is denied (``tool_not_allowed``).
    DENY = "deny"


class GuardProxy:
    """An MCP server standing in front of ``upstream``, guarding every ``tools/call``.

    ``agent`` is the one agent every call is requested as (a ``LocalAgent`` or an
    ``AgentClient``). With ``Unlisted.HIDE`` only the tools of ``policy`` are listed (default:
    the agent's own policy, when it can tell it: an ``AgentClient`` can't); with no policy known,
    every tool is. ``call_timeout`` bounds each upstream request; one that runs out fails
    (``failure``). Every tool listed is pinned at first sight in ``pins`` (a JSON file; ``None``
    keeps the pins in memory), and one that changes since is held as ``on_change`` says
    (``vetting``); hidden characters in a result are shown escaped or the result withheld, as
    ``results`` says::

        async with GuardProxy(guard.agent("files-bot"), "http://127.0.0.1:9000/mcp") as proxy:
            async with mcp.Client(proxy.server) as client:
                await client.call_tool("read_file", {"path": "notes.txt"})
    """

    def __init__(
        self,
        agent: AgentGuard,
        upstream: Target,
        *,
        unlisted: Unlisted = Unlisted.HIDE,
        policy: Policy | None = None,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        calls: CallPolicy = DEFAULT_CALLS,
        name: str = "guardkit-proxy",
        server_name: str | None = None,
        on_change: OnChange = OnChange.APPROVAL,
        pins: str | Path | None = None,
        results: Results = Results.ESCAPE,
    ) -> None:
        if server_name is not None and (
            not server_name
            or "." in server_name
            or reserved(server_name)
            or len(server_name) > _SERVER_NAME_MAX
        ):
            raise ValueError(
                f"a server name is 1-{_SERVER_NAME_MAX} characters, without '.', and not "
                f"reserved (llm_turn, guardkit...); got {server_name!r}"
            )
        self.agent = agent
        #: The namespace of this upstream's tools in the policy and the ledger (``NAME.tool``).
        self.server_name = server_name
        self._identity: dict[str, Any] = {}
        self.unlisted = Unlisted(unlisted)
        self.calls = calls
        self._policy = policy
        self._allowed: frozenset[str] | None = None
        self._upstream = Upstream(
            upstream, call_timeout=call_timeout, start_timeout=start_timeout, notify=self._relay
        )
        self._schemas = ToolSchemas()
        self.on_change = OnChange(on_change)
        #: What a result with characters a reader cannot see becomes (``results``).
        self.results = Results(results)
        self._pins = None if pins is None else Path(pins)
        self._vetting: Vetting | None = None
        self._listings: dict[Kind, Listing] = {}
        self._instructions: str | None = None
        self._watcher: anyio.abc.TaskGroup | None = None
        self._bus = InMemorySubscriptionBus()
        self._sessions: deque[ServerSession] = deque(maxlen=_MAX_SESSIONS)
        self._name = name
        self._server: Server[Any] | None = None

    @property
    def server(self) -> Server[Any]:
        """The SDK server clients talk to (serve it, or connect ``mcp.Client(proxy.server)``)."""
        if self._server is None:
            raise RuntimeError("enter the proxy first: async with GuardProxy(...) as proxy")
        return self._server

    async def __aenter__(self) -> GuardProxy:
        policy = self._policy
        if policy is None and isinstance(self.agent, KnowsPolicy):
            policy = await anyio.to_thread.run_sync(self.agent.policy)
        self._allowed = None if policy is None else frozenset(policy.tools)
        if policy is not None:
            self._refuse_unenforceable(policy)
        self._vetting = self._vet(policy)
        self._listings = {
            kind: Listing(
                PinFile(self._pins, self.agent.agent_id, self.server_name, kind),
                self.on_change,
                self._vetting.accept_args,
            )
            for kind in ("prompts", "resources", "resource_templates", "instructions")
        }
        await self._upstream.__aenter__()
        self._identity = {"upstream": self._describe()}
        self._instructions = await anyio.to_thread.run_sync(
            self._listings["instructions"].instructions, self._upstream.instructions
        )
        await self._record_pins()
        self._server = self._build()
        self._watcher = anyio.create_task_group()
        await self._watcher.__aenter__()
        self._watcher.start_soon(self._watch_pins)
        return self

    def _vet(self, policy: Policy | None) -> Vetting:
        names = () if policy is None else tuple(policy.tools)
        if self.server_name is not None:
            prefix = self.server_name + "."
            names = tuple(name.removeprefix(prefix) for name in names if name.startswith(prefix))
        pins = PinFile(self._pins, self.agent.agent_id, self.server_name)
        if self._pins is None:
            log.info("tool pins are kept in memory for this proxy's life (no pin file given)")
        return Vetting(
            pins,
            self._schemas,
            allowed=self._allowed,
            hide_unlisted=self.unlisted is Unlisted.HIDE,
            ledger_name=self.ledger_name,
            policy_names=names,
            on_change=self.on_change,
        )

    def _describe(self) -> dict[str, Any]:
        """Who runs this proxy's calls, recorded with each of them in the ledger."""
        found: dict[str, Any] = {"target": describe(self._upstream.target)}
        if self.server_name is not None:
            found["server_name"] = self.server_name
        info = self._upstream.server_info
        if info is not None:
            found["server_info"] = {"name": info.name, "version": info.version}
        return found

    def ledger_name(self, tool: str) -> str:
        """What a tool is called in the policy and the ledger: ``SERVER.tool`` under a
        ``server_name``, else its own name."""
        return tool if self.server_name is None else f"{self.server_name}.{tool}"

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._watcher is not None:
            self._watcher.cancel_scope.cancel()
            await self._watcher.__aexit__(None, None, None)
            self._watcher = None
        await self._upstream.__aexit__(exc_type, exc, tb)

    async def _watch_pins(self) -> None:
        # A held tool an operator accepts (guardkit mcp accept, another process) is announced
        # to the clients as a changed tool list, so they list it again without a restart.
        assert self._vetting is not None
        watched: list[tuple[Vetting | Listing, types.ServerNotification | None]] = [
            (self._vetting, types.ToolListChangedNotification()),
            (self._listings["prompts"], types.PromptListChangedNotification()),
            (self._listings["resources"], types.ResourceListChangedNotification()),
            (self._listings["resource_templates"], types.ResourceListChangedNotification()),
            (self._listings["instructions"], None),  # told at the next start
        ]
        while True:
            await anyio.sleep(_PIN_POLL)
            for held, notification in watched:
                if held.holding() and await anyio.to_thread.run_sync(held.any_accepted):
                    if notification is None:
                        log.warning("the instructions' change was accepted: a restart shows them")
                        continue
                    log.warning("a held item was accepted; telling clients its list changed")
                    await self._relay(notification)

    def _refuse_unenforceable(self, policy: Policy) -> None:
        """Refuse to start when the policy declares a check the proxy cannot apply."""
        target = self._upstream.target
        remote = isinstance(target, str)
        where = f"guardkit mcp proxy in front of {target}" if remote else "guardkit mcp proxy"
        problems = unenforceable(
            policy,
            paths=not remote,
            egress=not remote,
            provenance=False,
            runtime=False,
            where=where,
        )
        if problems:
            raise PolicyError(problems)

    # -- serving ----------------------------------------------------------------------------------

    def initialization_options(self) -> InitializationOptions:
        """What the proxy tells a handshake-era client it serves (the upstream's kinds)."""
        caps = self._upstream.capabilities
        return self.server.create_initialization_options(
            NotificationOptions(
                tools_changed=True,
                prompts_changed=caps.prompts is not None,
                resources_changed=caps.resources is not None,
            )
        )

    async def serve_stdio(self) -> None:
        """Serve one client over this process's stdin and stdout until it disconnects."""
        await serve_stdio(self.server, self.initialization_options(), self.call)

    async def serve_http(self, host: str = "127.0.0.1", port: int = 8765) -> None:
        """Serve streamable HTTP at ``http://HOST:PORT/mcp`` until interrupted."""
        import uvicorn

        app = self.server.streamable_http_app(host=host)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
        server = uvicorn.Server(config)
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve)
            while not server.started:
                await anyio.sleep(0.01)
            bound = server.servers[0].sockets[0].getsockname()[1] if server.servers else port
            # Scripts (and tests) read the address from here when they asked for port 0.
            print(f"guardkit mcp proxy: serving http://{host}:{bound}/mcp", file=sys.stderr)
            sys.stderr.flush()

    # -- the server -------------------------------------------------------------------------------

    def _build(self) -> Server[Any]:
        caps = self._upstream.capabilities
        forward = self._forward
        handlers: dict[str, Any] = {
            "on_list_tools": self._list_tools,
            "on_subscriptions_listen": ListenHandler(self._bus),
        }
        if caps.resources is not None:
            handlers["on_list_resources"] = self._pinned_list(
                types.ListResourcesRequest, types.ListResourcesResult, "resources", "resources"
            )
            handlers["on_list_resource_templates"] = self._pinned_list(
                types.ListResourceTemplatesRequest,
                types.ListResourceTemplatesResult,
                "resource_templates",
                "resourceTemplates",
            )
            handlers["on_read_resource"] = self._held_get(
                types.ReadResourceRequest, types.ReadResourceResult, "resources", "uri"
            )
            if caps.resources.subscribe:
                handlers["on_subscribe_resource"] = forward(
                    types.SubscribeRequest, types.EmptyResult
                )
                handlers["on_unsubscribe_resource"] = forward(
                    types.UnsubscribeRequest, types.EmptyResult
                )
        if caps.prompts is not None:
            handlers["on_list_prompts"] = self._pinned_list(
                types.ListPromptsRequest, types.ListPromptsResult, "prompts", "prompts"
            )
            handlers["on_get_prompt"] = self._held_get(
                types.GetPromptRequest, types.GetPromptResult, "prompts", "name"
            )
        if caps.completions is not None:
            handlers["on_completion"] = forward(types.CompleteRequest, types.CompleteResult)
        server: Server[Any] = Server(self._name, instructions=self._instructions, **handlers)
        server.add_request_handler("tools/call", types.CallToolRequestParams, self._call_tool)
        server.middleware.append(self._remember)
        return server

    def _forward(self, request_type: type[Any], result_type: type[BaseModel]) -> Any:
        upstream = self._upstream

        async def handler(ctx: ServerRequestContext[Any], params: Any) -> BaseModel:
            return await upstream.request(request_type(params=params), result_type)

        return handler

    def _pinned_list(
        self, request_type: type[Any], result_type: type[BaseModel], kind: Kind, field: str
    ) -> Any:
        # One page of a listing, vetted as its kind's pins say (``listings``).
        upstream, listing = self._upstream, self._listings[kind]

        async def handler(ctx: ServerRequestContext[Any], params: Any) -> BaseModel:
            page = await upstream.request(request_type(params=params), result_type)
            shown = await anyio.to_thread.run_sync(listing.see, getattr(page, field))
            await self._record_pins()
            return page.model_copy(update={field: shown})

        return handler

    def _held_get(
        self, request_type: type[Any], result_type: type[BaseModel], kind: Kind, key: str
    ) -> Any:
        # A prompt or resource that changed since it was pinned is not fetched (``listings``).
        upstream, listing = self._upstream, self._listings[kind]

        async def handler(ctx: ServerRequestContext[Any], params: Any) -> BaseModel:
            why = await anyio.to_thread.run_sync(listing.refused, str(getattr(params, key)))
            if why is not None:
                log.warning("refused to fetch it: %s", why)
                raise MCPError(code=types.INVALID_PARAMS, message=f"{why}. Nothing was fetched.")
            return await upstream.request(request_type(params=params), result_type)

        return handler

    async def _remember(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        # A handshake-era connection gets notifications on its own channel: keep its session.
        if ctx.method == "notifications/initialized":
            self._sessions.append(ctx.session)
        return await call_next(ctx)

    # -- tools ------------------------------------------------------------------------------------

    async def _list_page(
        self, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """One page of the upstream's listing, learnt and vetted: the tools it shows."""
        page = await self._upstream.request(
            types.ListToolsRequest(params=params), types.ListToolsResult
        )
        self._schemas.learn(page.tools)
        assert self._vetting is not None
        # Pins are a file shared with other proxies: read and written off the event loop.
        shown = await anyio.to_thread.run_sync(self._vetting.see, page.tools)
        await self._record_pins()
        return page.model_copy(update={"tools": shown})

    async def _record_pins(self) -> None:
        """Record what the last listings pinned or first saw changed in the agent's ledger."""
        assert self._vetting is not None
        events: list[PinRecord] = self._vetting.take_events()
        for listing in self._listings.values():
            events.extend(listing.take_events())
        if not events:
            return
        if not can_record(self.agent):
            log.warning("this agent's guard records no local denials: pin events not recorded")
            return
        where = self._vetting.pins.where
        for event in events:
            try:
                await adrive(record_pin(self.agent, event, where, self._identity), self.agent)
            except GuardError as exc:
                log.warning(
                    "could not record %s of %r in the ledger: %s",
                    event.code,
                    event.name,
                    exc.message,
                )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return await self._list_page(params)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> dict[str, Any]:
        wire = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        return await self.call(wire, ctx.protocol_version)

    async def call(self, params: Mapping[str, Any], version: str) -> dict[str, Any]:
        """One guarded ``tools/call`` (``params`` as on the wire, valid): the result to send
        the client, shaped for its protocol ``version``."""
        name: str = params["name"]
        arguments: Mapping[str, Any] = params.get("arguments") or {}
        vetting = self._vetting
        assert vetting is not None
        why = vetting.refused(name)
        if why is not None:
            return await self._deny_name(version, name, why, arguments)
        problem = await self._schemas.problem(self._list_page, name, arguments)
        if self._schemas.duplicated(name):
            log.warning("refused a call to %r: the upstream lists that name twice", name)
            return _shaped(
                version,
                error_result(
                    f"Error: the server lists more than one tool named {name}, so the proxy "
                    "cannot tell which one this call is for. Nothing was done; do not retry."
                ),
            )
        if problem is not None:
            return _shaped(
                version,
                error_result(
                    f"Error: invalid arguments for {name}: {problem}. Nothing was done; call "
                    "the tool again with arguments that match its schema."
                ),
            )
        seen = vetting.seen(name)
        context = self._identity
        approval: Reason | None = None
        if seen is not None:
            if seen.state == "refused":
                return await self._deny_name(version, name, seen.why, arguments)
            context = {**context, "tool_digest": seen.digest}
            if seen.state == "changed" and not await anyio.to_thread.run_sync(
                vetting.accepted, name
            ):
                held: Reason = {
                    "code": TOOL_CHANGED,
                    "tool": self.ledger_name(name),
                    "message": seen.why,
                }
                if self.on_change is not OnChange.APPROVAL:
                    flow = deny_held(self.agent, self.ledger_name(name), arguments, held, context)
                    return _shaped(version, refused(await adrive(flow, self.agent)))
                approval = held
        answer = await ask(
            self.agent, self.ledger_name(name), dict(arguments), self.calls, context, approval
        )
        if isinstance(answer, types.CallToolResult):
            return _shaped(version, answer)
        try:
            # The upstream's answer is validated once, for the client's version, and sent on.
            result = _shaped(version, await self._upstream.call_tool(params))
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await report(
                    self.agent, answer, "failure", "cancelled by the client", fault="caller"
                )
            raise
        except Exception as exc:  # noqa: BLE001 - any upstream failure is this call's failure
            detail = f"{type(exc).__name__}: {exc}"
            await report(self.agent, answer, "failure", detail, fault="upstream")
            return _shaped(version, error_result(f"Error: the tool's server failed: {detail}"))
        status, detail = outcome(result)
        result, found = shown(result, self.results)
        await report(self.agent, answer, status, "; ".join(filter(None, (detail, found))))
        return result

    async def _deny_name(
        self, version: str, name: str, why: str, arguments: Mapping[str, Any]
    ) -> dict[str, Any]:
        log.warning("refused a call to %r: %s", name[:NAME_MAX], why)
        found = await adrive(deny_name(self.agent, name, why, dict(arguments)), self.agent)
        return _shaped(version, refused(found))

    # -- notifications from the upstream ----------------------------------------------------------

    async def _relay(self, notification: types.ServerNotification) -> None:
        event: ServerEvent
        if isinstance(notification, types.ToolListChangedNotification):
            self._schemas.forget()
            if self._vetting is not None:
                self._vetting.forget()
            event = ToolsListChanged()
        elif isinstance(notification, types.PromptListChangedNotification):
            event = PromptsListChanged()
        elif isinstance(notification, types.ResourceListChangedNotification):
            event = ResourcesListChanged()
        elif isinstance(notification, types.ResourceUpdatedNotification):
            event = ResourceUpdated(uri=str(notification.params.uri))
        else:
            return
        await self._bus.publish(event)
        for session in list(self._sessions):
            await session.send_notification(notification)


def _shaped(version: str, result: Mapping[str, Any] | types.CallToolResult) -> dict[str, Any]:
    # The one validation of a tools/call result: its shape in the client's protocol version. A
    # handshake-era upstream leaves ``resultType`` out (absent means complete); 2026-era
    # versions require it.
    if isinstance(result, types.CallToolResult):
        result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    elif version in MODERN_PROTOCOL_VERSIONS and "resultType" not in result:
        result = {**result, "resultType": "complete"}
    return serialize_server_result("tools/call", version, result)
