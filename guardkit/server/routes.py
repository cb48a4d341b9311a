"""Every route of Lineage's ``/v1`` API (docs/server.md lists them) plus guardkit's extensions.

Extensions: ``POST /v1/agents/{id}/spawn``, ``POST /v1/agents/{id}/denials`` (a denial a local
check decided, recorded like the engine's own), ``POST .../actions/{action_id}/consume`` (backend
role), ``POST .../actions/{action_id}/withdraw`` (the agent stops waiting for a human),
``GET /v1/agents/{id}/export`` (JSON Lines), ``GET /v1/pending`` (the inbox),
``GET /v1/agents/{id}/policy`` (the agent's own policy, so its check sections apply over
HTTP), ``?wait=SECONDS`` on the action read, an
``Idempotency-Key`` header and an ``approval_reason`` field on ``POST .../actions``, and
``POST .../actions/{action_id}/link[/approve|/reject]`` (a signed approval link, no token).
"""

from __future__ import annotations

import io
import re
import time
from typing import Any

from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from guardkit.decisions import ActionStatus, ConsumedAction, DecisionDict, Severity
from guardkit.errors import InvalidInput
from guardkit.notify.inbox import pending_across
from guardkit.server.auth import Access, Role
from guardkit.server.endpoint import Ctx, endpoint
from guardkit.server.links import link_approve, link_reject, link_show
from guardkit.server.wire import header

__all__ = ["api_routes"]

ADMIN = Access()
AGENT = Access(agent=True)
READ_ACTION = Access(agent=True, backend=True)
BACKEND = Access(backend=True)
_IDEM_KEY = re.compile(r"[\x21-\x7e]{1,255}")


async def healthz(ctx: Ctx) -> Any:
    return {"ok": True}


async def public_key(ctx: Ctx) -> Any:
    return ctx.state.guard.public_key_info()


async def create_agent(ctx: Ctx) -> Any:
    body = await ctx.body("CreateAgent")
    status = await ctx.state.blocking(
        ctx.state.guard.engine.create_agent, body["agent_id"], body["policy"]
    )
    return {"agent": status, "token": ctx.state.agent_token(body["agent_id"])}


async def list_agents(ctx: Ctx) -> Any:
    return {"agents": await ctx.state.blocking(ctx.state.guard.agents)}


async def notifications(ctx: Ctx) -> Any:
    """guardkit: each notification sink's deliveries from this store."""
    return {"sinks": await ctx.state.blocking(ctx.state.guard.notifications)}


async def inbox(ctx: Ctx) -> Any:
    """guardkit: every agent's pending approvals, newest first (``?agent=``, ``?tool=``)."""
    agents = ctx.request.query_params.getlist("agent")
    tools = ctx.request.query_params.getlist("tool")
    engine = ctx.state.guard.engine
    return {"pending": await ctx.state.blocking(pending_across, engine, agents, tools)}


async def agent_status(ctx: Ctx) -> Any:
    return await ctx.state.blocking(ctx.state.guard.status, ctx.agent_id)


async def agent_policy(ctx: Ctx) -> Any:
    """guardkit: the agent's own policy, so its check sections apply over HTTP too."""
    policy = await ctx.state.blocking(ctx.state.guard.policy, ctx.agent_id)
    return {"agent_id": ctx.agent_id, "policy": policy.to_dict()}


async def agent_token(ctx: Ctx) -> Any:
    await ctx.state.blocking(ctx.state.guard.status, ctx.agent_id)
    return {"token": ctx.state.agent_token(ctx.agent_id)}


async def spawn(ctx: Ctx) -> Any:
    body = await ctx.body("Spawn")
    status = await ctx.state.blocking(
        ctx.state.guard.engine.spawn, ctx.agent_id, body["child_id"], body["policy"], body["budget"]
    )
    return {"agent": status, "token": ctx.state.agent_token(body["child_id"])}


async def request_action(ctx: Ctx) -> Any:
    body = await ctx.body("Request")
    state, agent_id = ctx.state, ctx.agent_id
    key = header(ctx.request, b"idempotency-key")
    if key is not None:
        if not _IDEM_KEY.fullmatch(key):
            raise InvalidInput("Idempotency-Key must be 1-255 visible ASCII characters")
        return await state.committed(
            lambda: state.idempotent_request(agent_id, key, body), agent_id
        )
    engine = state.guard.engine
    tool, value, cost = body["tool"], body.get("input"), body.get("cost")
    why = body.get("approval_reason")
    return await state.committed(
        lambda: engine.request(agent_id, tool, value, cost, approval_reason=why).to_dict(),
        agent_id,
    )


async def denial(ctx: Ctx) -> Any:
    body = await ctx.body("Denial")
    engine, agent_id = ctx.state.guard.engine, ctx.agent_id
    severity = body.get("severity")
    try:
        level = None if severity is None else Severity(severity)
    except ValueError:
        raise InvalidInput("severity must be minor, moderate, severe or fatal") from None

    def run() -> DecisionDict:
        return engine.deny(
            agent_id, body["tool"], body.get("input"), body["reason"], level
        ).to_dict()

    return await ctx.state.committed(run, agent_id)


async def pending(ctx: Ctx) -> Any:
    return {"pending": await ctx.state.blocking(ctx.state.guard.pending, ctx.agent_id)}


def _wait_seconds(ctx: Ctx) -> float:
    text = ctx.request.query_params.get("wait")
    if text is None or text == "":
        return 0.0
    try:
        wait = float(text)
    except ValueError:
        wait = -1.0
    if not 0 <= wait <= ctx.state.limits.max_wait:
        raise InvalidInput(f"wait must be 0-{ctx.state.limits.max_wait:g} seconds")
    return wait


async def read_action(ctx: Ctx) -> Any:
    wait = _wait_seconds(ctx)
    state, guard = ctx.state, ctx.state.guard
    if wait <= 0:
        return await state.blocking(guard.action, ctx.agent_id, ctx.action_id)
    caller = ctx.caller
    holder = "none" if caller is None else f"{caller.role.value}:{caller.agent_id or ''}"
    deadline = time.monotonic() + wait
    with state.waits.take(holder):
        while True:
            event = state.watch.current()
            action = await state.wait_read(guard.action, ctx.agent_id, ctx.action_id)
            left = deadline - time.monotonic()
            decided = action["status"] != ActionStatus.PENDING_APPROVAL.value
            if decided or left <= 0 or state.watch.stopping:
                return action
            await state.watch.wait(event, left)


async def outcome(ctx: Ctx) -> Any:
    body = await ctx.body("Outcome")
    engine, agent_id, action_id = ctx.state.guard.engine, ctx.agent_id, ctx.action_id
    operator = ctx.caller is not None and ctx.caller.role is Role.ADMIN
    status, detail, fault = body["status"], body.get("detail") or "", body.get("fault") or "agent"
    return await ctx.state.committed(
        lambda: engine.report(agent_id, action_id, status, detail, operator=operator, fault=fault),
        agent_id,
    )


async def withdraw(ctx: Ctx) -> Any:
    body = await ctx.body("Withdraw")
    engine, agent_id, action_id = ctx.state.guard.engine, ctx.agent_id, ctx.action_id
    timeout = body["timeout"]
    return await ctx.state.committed(
        lambda: engine.withdraw(agent_id, action_id, timeout), agent_id
    )


async def approve(ctx: Ctx) -> Any:
    body = await ctx.body("Approve")
    return await ctx.state.blocking(
        ctx.state.guard.approve, ctx.agent_id, ctx.action_id, body["approver"], body.get("note")
    )


async def reject(ctx: Ctx) -> Any:
    body = await ctx.body("Reject")
    return await ctx.state.blocking(
        ctx.state.guard.reject,
        ctx.agent_id,
        ctx.action_id,
        body["approver"],
        body["reason"],
        body.get("scar"),
    )


async def consume(ctx: Ctx) -> Any:
    body = await ctx.body("Consume")
    by = body.get("by") or (ctx.caller.role.value if ctx.caller else "backend")
    engine, agent_id, action_id = ctx.state.guard.engine, ctx.agent_id, ctx.action_id

    def run() -> ConsumedAction:
        return engine.consume(
            agent_id, action_id, body["tool"], body.get("input"), body.get("cost"), by=by
        )

    return await ctx.state.blocking(run)


async def scar(ctx: Ctx) -> Any:
    body = await ctx.body("Scar")
    return await ctx.state.blocking(
        ctx.state.guard.scar, ctx.agent_id, body["severity"], body["reason"], body.get("action_id")
    )


async def terminate(ctx: Ctx) -> Any:
    body = await ctx.body("Terminate")
    return await ctx.state.blocking(
        ctx.state.guard.terminate, ctx.agent_id, body["reason"], body["by"]
    )


async def agent_log(ctx: Ctx) -> Any:
    after, limit = ctx.query_int("after"), ctx.query_int("limit")
    return await ctx.state.blocking(ctx.state.guard.log, ctx.agent_id, after, limit)


async def verify(ctx: Ctx) -> Any:
    return await ctx.state.blocking(ctx.state.guard.verify, ctx.agent_id)


async def export(ctx: Ctx) -> Any:
    out = io.StringIO()
    await ctx.state.blocking(ctx.state.guard.export, ctx.agent_id, out)
    return Response(out.getvalue().encode(), media_type="application/x-ndjson")


def api_routes() -> list[BaseRoute]:
    agent = "/v1/agents/{agent_id}"
    action = agent + "/actions/{action_id}"
    # Starlette tries the routes in order, a regex match each: the two every guarded call makes
    # come first (no earlier route can match their paths, so the order changes no answer).
    table: list[tuple[str, str, Access | None, Any]] = [
        ("POST", agent + "/actions", AGENT, request_action),
        ("POST", action + "/outcome", AGENT, outcome),
        ("GET", "/healthz", None, healthz),
        ("GET", "/v1/public-key", None, public_key),
        ("POST", "/v1/agents", ADMIN, create_agent),
        ("GET", "/v1/agents", ADMIN, list_agents),
        ("GET", "/v1/notifications", ADMIN, notifications),
        ("GET", "/v1/pending", ADMIN, inbox),
        ("GET", agent, AGENT, agent_status),
        ("GET", agent + "/token", ADMIN, agent_token),
        ("GET", agent + "/policy", AGENT, agent_policy),
        ("POST", agent + "/spawn", AGENT, spawn),
        ("POST", agent + "/denials", AGENT, denial),
        ("GET", agent + "/actions/pending", ADMIN, pending),
        ("GET", action, READ_ACTION, read_action),
        ("POST", action + "/withdraw", AGENT, withdraw),
        ("POST", action + "/approve", ADMIN, approve),
        ("POST", action + "/reject", ADMIN, reject),
        ("POST", action + "/consume", BACKEND, consume),
        ("POST", action + "/link", None, link_show),
        ("POST", action + "/link/approve", None, link_approve),
        ("POST", action + "/link/reject", None, link_reject),
        ("POST", agent + "/scars", ADMIN, scar),
        ("POST", agent + "/terminate", ADMIN, terminate),
        ("GET", agent + "/log", ADMIN, agent_log),
        ("GET", agent + "/verify", ADMIN, verify),
        ("GET", agent + "/export", ADMIN, export),
    ]
    return [
        Route(path, endpoint(access, handler), methods=[method])
        for method, path, access, handler in table
    ]
