"""``guardkit mcp proxy``: put the guard between an MCP client and any MCP server.

::

    guardkit mcp proxy --agent files-bot --policy policy.toml --db guard.db -- python server.py
    guardkit mcp proxy --agent files-bot --guard http://127.0.0.1:8700 --token $TOKEN \\
        --upstream http://127.0.0.1:9000/mcp --serve http --bind 127.0.0.1:8765

Point the client (Claude Desktop, an IDE, an agent framework) at the proxy instead of the server,
or let ``guardkit mcp wrap CONFIG`` rewrite the client's configuration so every server runs behind
one.
Approvals are given from another terminal (``guardkit approve AGENT act-N --by NAME --db PATH``)
or the console of ``guardkit serve``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import click

from .accept import accept

__all__ = ["mcp"]


@click.group()
def mcp() -> None:
    """Guard MCP servers: a proxy in front of any server (stdio or streamable HTTP)."""


mcp.add_command(accept)


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
    "--on-change",
    type=click.Choice(["hide", "deny", "approval"]),
    default="approval",
    show_default=True,
    help="A tool whose description or schema changed since it was pinned: left out of "
    "tools/list, listed as pinned and denied, or listed as pinned with every call sent to a "
    "human (the default), until `guardkit mcp accept`.",
)
@click.option(
    "--pins",
    "pins_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="The pin file (default: beside an embedded SQLite --db, DB.mcp-pins.json; with "
    "--guard or another store, pins last only as long as the proxy).",
)
@click.option(
    "--results",
    type=click.Choice(["escape", "refuse"]),
    default="escape",
    show_default=True,
    help="A tool result holding characters a reader cannot see (ANSI escapes, zero-width, "
    "bidirectional): shown with each escaped, or withheld (the call still ran).",
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
    on_change: str,
    pins_path: str | None,
    results: str,
    approval_timeout: float,
    poll: float,
    command: tuple[str, ...],
) -> None:
    """Serve an upstream MCP server's tools, asking the guard before every call.

    The upstream is `-- COMMAND ARGS...` (a stdio server, any language) or --upstream URL.
    """
    from mcp import StdioServerParameters

    from . import CallPolicy, GuardProxy, OnChange, Results, Unlisted
    from .pins import default_pin_path

    if bool(command) == bool(upstream_url):
        raise click.UsageError(
            "give the upstream either as -- COMMAND ARGS... or as --upstream URL"
        )
    if guard_url is not None and not token:
        raise click.UsageError("--guard needs --token (the agent's token), or GUARDKIT_TOKEN")
    host, port = _bind(bind) if serve == "http" else ("127.0.0.1", 0)
    pins = Path(pins_path) if pins_path else None if guard_url else default_pin_path(db)
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
                on_change=OnChange(on_change),
                pins=pins,
                results=Results(results),
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
        raise click.ClickException(exc.message) from exc


@mcp.command()
@click.argument("config", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--dir",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("~/.guardkit/mcp"),
    show_default=True,
    help="Where the policies (one per server, or one shared) and the ledger are written.",
)
@click.option("--db", default=None, help="The proxies' ledger (default: DIR/guard.db).")
@click.option(
    "--shared-agent",
    default=None,
    help="Guard every server as this one agent, under one policy (default: an agent per "
    "server, named PREFIX + server).",
)
@click.option("--agent-prefix", default="mcp-", show_default=True)
@click.option(
    "--guardkit",
    "guardkit_command",
    default=None,
    help="How the client starts guardkit (default: this interpreter with -m guardkit, an "
    "absolute path: desktop clients often start servers without your PATH).",
)
@click.option("--skip", multiple=True, help="Leave this server as it is (repeatable).")
@click.option(
    "--list-tools/--no-list-tools",
    default=True,
    show_default=True,
    help="Start each server once to name its tools in the policy skeleton.",
)
@click.option(
    "--list-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=20.0,
    show_default=True,
    help="Seconds a server may take to list its tools.",
)
@click.option("--dry-run", is_flag=True, help="Show the new configuration; write nothing.")
@click.option("--undo", is_flag=True, help="Put every wrapped server back as it was.")
def wrap(
    config: Path,
    out_dir: Path,
    db: str | None,
    shared_agent: str | None,
    agent_prefix: str,
    guardkit_command: str | None,
    skip: tuple[str, ...],
    list_tools: bool,
    list_timeout: float,
    dry_run: bool,
    undo: bool,
) -> None:
    """Put every server of an MCP client's CONFIG behind `guardkit mcp proxy`.

    CONFIG is a Claude Desktop, Claude Code, Cursor or Windsurf `mcpServers` file, or a VS Code
    `mcp.json` / `settings.json`. The original is kept as CONFIG.guardkit-backup; running it again
    changes nothing; --undo restores every server.
    """
    from . import wrap as wrapping

    try:
        data, text = wrapping.read_config(config)
        if undo:
            backup_path = config.with_name(config.name + wrapping.BACKUP_SUFFIX)
            backup = wrapping.read_config(backup_path)[0] if backup_path.exists() else None
            plan = wrapping.unwrap_config(data, backup)
        else:
            folder = out_dir.expanduser().resolve()
            options = wrapping.WrapOptions(
                guardkit=tuple(shlex.split(guardkit_command))
                if guardkit_command
                else (sys.executable, "-m", "guardkit"),
                db=str(Path(db).expanduser().resolve()) if db else str(folder / "guard.db"),
                policy_dir=str(folder),
                agent_prefix=agent_prefix,
                shared=shared_agent,
            )
            plan = wrapping.wrap_config(data, options, skip=skip)
    except wrapping.WrapError as exc:
        raise click.ClickException(str(exc)) from exc
    if dry_run:
        click.echo(json.dumps(plan.config, indent=2, ensure_ascii=False))
        _say_plan(plan, undo=undo, dry_run=True)
        return
    if not undo and plan.changed:
        _write_policies(data, plan, options, list_tools=list_tools, timeout=list_timeout)
    wrapping.apply(config, plan, text, undo=undo)
    _say_plan(plan, undo=undo, dry_run=False)


def _write_policies(
    original: dict[str, Any], plan: Any, options: Any, *, list_tools: bool, timeout: float
) -> None:
    """A policy skeleton for each newly wrapped server (one shared file with --shared-agent);
    a policy file that is already there is the user's and is kept."""
    from guardkit.codemods.policy_skeleton import is_destructive  # type: ignore[import-not-found,unused-ignore]

    from . import wrap as wrapping

    servers = wrapping.find_servers(original)[1]
    wanted = [name for name, action in plan.actions.items() if action == "wrapped"]
    files: dict[str, dict[str, list[str] | None]] = {}
    for name in wanted:
        files.setdefault(options.policy(name), {})[name] = None
    for path, tools in files.items():
        if Path(path).exists():
            continue
        for name in tools:
            if list_tools:
                listed = _tools_of(name, servers[name], timeout)
                namespace = options.namespace(name)
                if listed is not None and namespace:
                    listed = [f"{namespace}.{tool}" for tool in listed]
                tools[name] = listed
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(
            wrapping.render_policy(tools, destructive=is_destructive), encoding="utf-8"
        )
        click.echo(f"wrote {path}")


def _tools_of(name: str, entry: dict[str, Any], timeout: float) -> list[str] | None:
    from . import wrap as wrapping

    try:
        return anyio.run(wrapping.list_tools, entry, timeout)
    except Exception as exc:  # noqa: BLE001 - any failure of a foreign server: say it, go on
        click.echo(
            f"warning: {name!r} did not list its tools ({type(exc).__name__}: {exc}); its "
            "policy lists none, so its proxy hides every tool until you add them",
            err=True,
        )
        return None


def _say_plan(plan: Any, *, undo: bool, dry_run: bool) -> None:
    would = "would be " if dry_run else ""
    for name, action in plan.actions.items():
        words = {
            "wrapped": f"{would}behind guardkit mcp proxy",
            "already": "already behind guardkit mcp proxy",
            "unwrapped": f"{would}restored",
            "unchanged": "left as it is",
        }[action]
        click.echo(f"{name}: {words}")
    if not plan.changed:
        click.echo("nothing to change")
    elif not dry_run and not undo:
        click.echo("restart the client to start the proxies; `guardkit mcp wrap --undo` reverts")
