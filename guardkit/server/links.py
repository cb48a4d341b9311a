"""The routes a signed approval link works on: show its action, approve it, reject it.

Each takes the link's token in a JSON body (``{"link": ...}``), never in the URL, and needs no
bearer token: the link is the capability, for the one action in the path. Opening a link's page
only reads (``POST .../link``, so the token stays out of every log); deciding is its own POST.
Before deciding, the action's input hash is checked against the link's; the decision records
the link in the ledger (``approved_by`` / ``by``: ``<name> via link <id> (<sink>)``), in the
transaction that takes the action out of ``pending_approval``, which is what makes a link
single-use across restarts and servers.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

from guardkit.decisions import Action, ActionStatus, DecisionDict
from guardkit.errors import InvalidState
from guardkit.notify.links import LinkClaims, LinkRefused, link_id
from guardkit.server.endpoint import Ctx

__all__ = ["link_approve", "link_reject", "link_show"]


def _bound(ctx: Ctx, token: str) -> LinkClaims:
    now = ctx.state.guard.engine.clock()
    return ctx.state.tokens.link(token, ctx.agent_id, ctx.action_id, now)


def _same_input(action: Action, claims: LinkClaims) -> None:
    if not hmac.compare_digest(action["input_sha256"], claims["input_sha256"]):
        raise LinkRefused(
            f"this approval link was made for another input than {action['action_id']}'s"
        )


def _pending(action: Action, claims: LinkClaims) -> None:
    _same_input(action, claims)
    if action["status"] != ActionStatus.PENDING_APPROVAL.value:
        by = f" by {action['approved_by']}" if action["approved_by"] else ""
        raise LinkRefused(
            f"this approval link can't decide {action['action_id']} any more: it is "
            f"{action['status']}{by}"
        )


def _who(name: str | None, token: str, claims: LinkClaims) -> str:
    vouched = f"via link {link_id(token)} ({claims['sink']})"
    return f"{name.strip()} {vouched}" if name and name.strip() else vouched


async def link_show(ctx: Ctx) -> Any:
    """The action a link may decide, as the ledger says, and the link's expiry."""
    body = await ctx.body("Link")
    claims = _bound(ctx, body["link"])
    action = await ctx.state.blocking(ctx.state.guard.action, ctx.agent_id, ctx.action_id)
    _same_input(action, claims)
    return {
        "agent_id": ctx.agent_id,
        "action": action,
        "expires_at": claims["exp"],
        "sink": claims["sink"],
        "link_id": link_id(body["link"]),
    }


async def _decide(ctx: Ctx, schema: str, decide: Callable[[str, Any], DecisionDict]) -> Any:
    body = await ctx.body(schema)
    claims = _bound(ctx, body["link"])
    guard, agent_id, action_id = ctx.state.guard, ctx.agent_id, ctx.action_id
    who = _who(body.get("name"), body["link"], claims)

    def run() -> DecisionDict:
        _pending(guard.action(agent_id, action_id), claims)
        try:
            return decide(who, body)
        except InvalidState as exc:  # decided between the read and this decision
            message = f"this approval link can't decide {action_id} any more: {exc}"
            raise LinkRefused(message) from None

    return await ctx.state.blocking(run)


async def link_approve(ctx: Ctx) -> Any:
    guard, agent_id, action_id = ctx.state.guard, ctx.agent_id, ctx.action_id
    return await _decide(
        ctx,
        "LinkApprove",
        lambda who, body: guard.approve(agent_id, action_id, who, body.get("note")),
    )


async def link_reject(ctx: Ctx) -> Any:
    guard, agent_id, action_id = ctx.state.guard, ctx.agent_id, ctx.action_id

    def reject(who: str, body: Any) -> DecisionDict:
        reason = body.get("reason") or "rejected with an approval link"
        return guard.reject(agent_id, action_id, who, reason)

    return await _decide(ctx, "LinkReject", reject)
