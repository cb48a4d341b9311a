"""``guardkit mcp proxy``: put the guard between an MCP client and any MCP server.

::

    guardkit mcp proxy --agent files-bot --policy policy.toml --db guard.db -- python server.py
    guardkit mcp proxy --agent files-bot --guard http://127.0.0.1:8700 --token $TOKEN \\
        --upstream http://127.0.0.1:9000/mcp --serve http --bind 127.0.0.1:8765

Point the client (Claude Desktop, an IDE, an agent framework) at the proxy instead of the server.
Approvals are given from another terminal (``guardkit approve AGENT act-N --by NAME --db PATH``)
or the console of ``guardkit serve``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import click

__all__ = ["mcp"]


@click.group()
def mcp() -> None:
    """Guard MCP servers: a proxy in front of any server (stdio or streamable HTTP)."""


@mcp.command(context_settings={"ignore_unknown_options": True})
@click.option(
    "--agent",
    "agent_id",
    envvar="GUARDKIT_AGENT",
    required=True,
    help="The agent every call is requested as; env GUARDKIT_AGENT.",
)
@click.option(
    "--policy",
    "policy_path",
    envvar="GUARDKIT_POLICY",
    default=None,
    type=click.Path(exists=True, dir_okay=False),
    help="Policy file (.json/.toml): creates the agent in --db if it is new; with "
    "--guard, only says which tools to list.",
)
@click.option(
    "--db",
    envvar="GUARDKIT_DB",
    default="guardkit.db",
    show_default=True,
    help="Embedded guard's ledger (SQLite path or URL); env GUARDKIT_DB.",
)
@click.option(
    "--durability",
    type=click.Choice(["full", "normal"]),
    default="full",
    show_default=True,
    help="SQLite --db: fsync every decision (full) or survive crashes only (normal).",
)
@click.option(
    "--guard",
    "guard_url",
    envvar="GUARDKIT_URL",
    default=None,
    help="A guard server (guardkit serve) instead of --db; env GUARDKIT_URL.",
)
@click.option(
    "--token",
    envvar="GUARDKIT_TOKEN",
    default=None,
    help="The agent's token for --guard; env GUARDKIT_TOKEN.",
)
@click.option(
    "--upstream",
    "upstream_url",
    default=None,
    help="A streamable-HTTP MCP server URL, instead of a COMMAND to run.",
)
@click.option(
    "--serve",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="How clients reach the proxy.",
)
@click.option(
    "--bind",
    default="127.0.0.1:8765",
    show_default=True,
    help="HOST:PORT for --serve http (port 0 picks one; the address goes to stderr).",
)
@click.option(
    "--unlisted",
    type=click.Choice(["hide", "deny"]),
    default="hide",
    show_default=True,
    help="Tools the policy doesn't list: left out of tools/list, or listed and denied.",
)
@click.option(
    "--call-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=120.0,
    show_default=True,
    help="Seconds an upstream request may take before it fails.",
)
@click.option(
    "--start-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="Seconds the upstream may take to start and answer initialize.",
)
@click.option(
    "--server-name",
    default=None,
    help="Namespace of this upstream's tools in the policy and the ledger (NAME.tool), so one "
    "agent can front several servers, each with its own rules.",
)
@click.option(
    "--approval-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=300,
    show_default=True,
    help="Seconds a call waits for a human before it is refused.",
)
@click.option(
    "--poll",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Seconds between looks for an approval from elsewhere.",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def proxy(
    agent_id: str,
    policy_path: str | None,
    db: str,
    durability: str,
    guard_url: str | None,
    token: str | None,
    upstream_url: str | None,
    serve: str,
    bind: str,
    unlisted: str,
    call_timeout: float,
    start_timeout: float,
    server_name: str | None,
    approval_timeout: float,
    poll: float,
    command: tuple[str, ...],
) -> None:
    """Serve an upstream MCP server's tools, asking the guard before every call.

    The upstream is `-- COMMAND ARGS...` (a stdio server, any language) or --upstream URL.
    """
    from mcp import StdioServerParameters

    from . import CallPolicy, GuardProxy, Unlisted

    if bool(command) == bool(upstream_url):
        raise click.UsageError(
            "give the upstream either as -- COMMAND ARGS... or as --upstream URL"
        )
    if guard_url is not None and not token:
        raise click.UsageError("--guard needs --token (the agent's token), or GUARDKIT_TOKEN")
    host, port = _bind(bind) if serve == "http" else ("127.0.0.1", 0)
    target: Any = upstream_url or StdioServerParameters(
        command=command[0], args=list(command[1:]), env=_upstream_env()
    )
    with _agent(agent_id, policy_path, db, durability, guard_url, token) as (agent, policy):

        async def main() -> None:
            async with GuardProxy(
                agent,
                target,
                unlisted=Unlisted(unlisted),
                policy=policy,
                call_timeout=call_timeout,
                start_timeout=start_timeout,
                server_name=server_name,
                calls=CallPolicy(approval_timeout=approval_timeout, poll=poll),
            ) as running:
                try:
                    if serve == "http":
                        await running.serve_http(host, port)
                    else:
                        await running.serve_stdio()
                finally:
                    aclose = getattr(agent, "aclose", None)
                    if aclose is not None:  # an AgentClient's async pool lives on this loop
                        await aclose()

        from guardkit import GuardError

        try:
            anyio.run(main)
        except GuardError:
            raise  # a policy the proxy cannot enforce: worded by _agent
        except (ConnectionError, ValueError) as exc:
            raise click.ClickException(str(exc)) from exc


def _bind(bind: str) -> tuple[str, int]:
    host, _, port = bind.rpartition(":")
    if not host or not port.isdigit():
        raise click.UsageError(f"--bind wants HOST:PORT, got {bind!r}")
    return host.strip("[]"), int(port)


def _upstream_env() -> dict[str, str]:
    # The upstream runs with the user's environment, less the guard's own credentials: a server
    # the guard stands in front of must not be able to speak for the agent.
    return {key: value for key, value in os.environ.items() if not key.startswith("GUARDKIT_")}


@contextmanager
def _agent(
    agent_id: str,
    policy_path: str | None,
    db: str,
    durability: str,
    guard_url: str | None,
    token: str | None,
) -> Iterator[tuple[Any, Any]]:
    from guardkit import GuardError, load_policy

    try:
        policy = load_policy(policy_path) if policy_path else None
        if guard_url is not None:
            from guardkit.client import AgentClient

            with AgentClient(guard_url, agent_id, token or "") as client:
                yield client, policy
            return
        from guardkit import Guard

        with Guard(db, durability=durability) as guard:
            if policy_path:
                guard.create_agent(agent_id, policy_path, exist_ok=True)
            yield guard.agent(agent_id), policy
    except GuardError as exc:
        raise click.ClickException(f"{exc.message} ({exc.code})") from exc
