"""``guardkit mcp wrap CONFIG``: put every server of an MCP client's configuration behind the proxy.

Reads the JSON configuration a desktop client or an IDE keeps (``mcpServers`` of Claude Desktop,
Claude Code, Cursor and Windsurf; ``servers`` of VS Code's ``mcp.json`` or ``mcp.servers`` of its
``settings.json``) and rewrites each server's entry so that the client starts
``guardkit mcp proxy ... -- <the server's own command>`` instead of the server. A streamable-HTTP
server (``url``) becomes a local stdio proxy with ``--upstream URL``. Everything else of an entry
(``env``, ``disabled``, client-specific keys) is kept.

Pure functions here (``wrap_config``, ``unwrap_config``); the files are read and written by
``apply`` (the original kept as ``CONFIG.guardkit-backup``, written once; ``--undo`` restores every
entry from it). A second ``wrap`` of a wrapped file changes nothing. A server the proxy cannot
stand in front of (an SSE server, a remote one that needs headers) is refused by name before
anything is written: leaving it unguarded without a word would fail open.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "BACKUP_SUFFIX",
    "Plan",
    "WrapError",
    "WrapOptions",
    "apply",
    "find_servers",
    "list_tools",
    "read_config",
    "render_policy",
    "unwrap_config",
    "wrap_config",
]

BACKUP_SUFFIX = ".guardkit-backup"
#: The transports a client entry may name; the proxy serves stdio and reaches stdio or HTTP.
_STDIO = {None, "stdio"}
_HTTP = {"http", "streamable-http", "streamableHttp"}

Action = Literal["wrapped", "already", "unwrapped", "unchanged"]


class WrapError(ValueError):
    """The configuration cannot be wrapped as asked; nothing was written."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WrapOptions:
    """How wrapped entries start the proxy."""

    #: The command that runs guardkit, as the client will start it (an absolute interpreter by
    #: default: desktop clients often start servers without the user's PATH).
    guardkit: tuple[str, ...] = (sys.executable, "-m", "guardkit")
    #: The ledger every proxy writes (one SQLite file; proxies in separate processes share it).
    db: str
    #: Where each server's policy file is: ``policy_dir/<server>.toml``.
    policy_dir: str
    #: One agent per server, named ``agent_prefix + server``; or one shared agent (``shared``).
    agent_prefix: str = "mcp-"
    shared: str | None = None

    def agent(self, server: str) -> str:
        return self.shared or f"{self.agent_prefix}{server}"

    def policy(self, server: str) -> str:
        name = self.shared or server
        return str(Path(self.policy_dir) / f"{_file_safe(name)}.toml")

    def namespace(self, server: str) -> str | None:
        """The proxy's ``--server-name`` for ``server``: with one shared agent each server's tools
        are ``NAME.tool`` in its policy and ledger, so two servers never share a rule."""
        return _file_safe(server).replace(".", "_") if self.shared else None


@dataclass(slots=True)
class Plan:
    """What a wrap or an unwrap does to one configuration."""

    config: dict[str, Any]
    actions: dict[str, Action] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return any(a in ("wrapped", "unwrapped") for a in self.actions.values())


def _file_safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "server"


def find_servers(config: Mapping[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The key path of the servers' table in ``config`` and the table itself."""
    for path in (["mcpServers"], ["servers"], ["mcp", "servers"]):
        node: Any = config
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        if isinstance(node, dict):
            return path, node
    raise WrapError(
        "no MCP servers found: expected an 'mcpServers' object (Claude Desktop, Cursor, Claude "
        "Code), 'servers' (VS Code mcp.json) or 'mcp.servers' (VS Code settings.json)"
    )


def _is_wrapped(entry: Mapping[str, Any]) -> bool:
    args = entry.get("args")
    if not isinstance(args, list):
        return False
    words = [str(a) for a in args]
    for i in range(len(words) - 1):
        if words[i] == "mcp" and words[i + 1] == "proxy":
            before = [str(entry.get("command", "")), *words[:i]]
            return any("guardkit" in Path(w).name for w in before)
    return False


def _upstream(name: str, entry: Mapping[str, Any]) -> list[str]:
    """The proxy's arguments that name the upstream of ``entry``."""
    kind = entry.get("type", entry.get("transport"))
    if "command" in entry and kind in _STDIO:
        command, args = entry["command"], entry.get("args", [])
        if not isinstance(command, str) or not command:
            raise WrapError(f"server {name!r}: 'command' must be a non-empty string")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise WrapError(f"server {name!r}: 'args' must be a list of strings")
        return ["--", command, *args]
    if "url" in entry and (kind is None or kind in _HTTP):
        if entry.get("headers"):
            raise WrapError(
                f"server {name!r} sends headers the proxy cannot pass on: put it behind "
                "`guardkit mcp proxy --upstream URL --serve http` by hand, or leave it out "
                "with --skip " + name
            )
        return ["--upstream", str(entry["url"])]
    raise WrapError(
        f"server {name!r}: the proxy reaches stdio and streamable-HTTP servers, not "
        f"{kind or 'this entry'!r}; leave it out with --skip {name}"
    )


def _wrapped(name: str, entry: Mapping[str, Any], options: WrapOptions) -> dict[str, Any]:
    upstream = _upstream(name, entry)
    kept = {k: v for k, v in entry.items() if k not in ("command", "args", "url", "headers")}
    if "type" in kept:
        kept["type"] = "stdio"
    if "transport" in kept:
        kept["transport"] = "stdio"
    command, *prefix = options.guardkit
    namespace = options.namespace(name)
    proxy = [
        *prefix, "mcp", "proxy",
        "--agent", options.agent(name),
        "--policy", options.policy(name),
        "--db", options.db,
        *(["--server-name", namespace] if namespace else []),
        *upstream,
    ]  # fmt: skip
    return {"command": command, "args": proxy, **kept}


def wrap_config(
    config: Mapping[str, Any], options: WrapOptions, *, skip: Sequence[str] = ()
) -> Plan:
    """``config`` with every server behind the proxy (``skip``: names left as they are)."""
    out: dict[str, Any] = json.loads(json.dumps(config))
    _, servers = find_servers(out)
    unknown = sorted(set(skip) - set(servers))
    if unknown:
        raise WrapError(f"--skip names no server of this configuration: {', '.join(unknown)}")
    plan = Plan(out)
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            raise WrapError(f"server {name!r}: its entry must be an object")
        if name in skip:
            plan.actions[name] = "unchanged"
        elif _is_wrapped(entry):
            plan.actions[name] = "already"
        else:
            servers[name] = _wrapped(name, entry, options)
            plan.actions[name] = "wrapped"
    return plan


def _original(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A wrapped entry's server as it was, read back from the proxy's arguments."""
    args = [str(a) for a in entry.get("args", [])]
    kept = {k: v for k, v in entry.items() if k not in ("command", "args")}
    if "--" in args:
        command, *rest = args[args.index("--") + 1 :]
        return {"command": command, "args": rest, **kept}
    url = args[args.index("--upstream") + 1]
    if "type" in kept:
        kept["type"] = "http"
    return {"url": url, **kept}


def unwrap_config(config: Mapping[str, Any], backup: Mapping[str, Any] | None) -> Plan:
    """``config`` with every wrapped server restored: from ``backup`` (the file as it was before
    the first wrap) where it holds that server, else from the proxy's own arguments."""
    out: dict[str, Any] = json.loads(json.dumps(config))
    _, servers = find_servers(out)
    before: Mapping[str, Any] = {}
    if backup is not None:
        with_servers = find_servers(backup)[1]
        before = {n: e for n, e in with_servers.items() if isinstance(e, dict)}
    plan = Plan(out)
    for name, entry in servers.items():
        if isinstance(entry, dict) and _is_wrapped(entry):
            earlier = before.get(name)
            usable = earlier is not None and not _is_wrapped(earlier)
            servers[name] = dict(earlier) if usable and earlier else _original(entry)
            plan.actions[name] = "unwrapped"
        else:
            plan.actions[name] = "unchanged"
    return plan


def render_policy(
    tools: Mapping[str, Sequence[str] | None], *, destructive: Callable[[str], bool]
) -> str:
    """A policy skeleton for the proxies of ``tools`` (server -> the names it lists): costs 1,
    destructive-looking names behind a human's approval. ``None`` for a server that could not be
    asked: nothing is listed for it, so its proxy hides every tool (fail closed)."""
    servers = ", ".join(repr(s) for s in tools)
    lines = [
        f"# guardkit policy for the MCP server(s) {servers}, written by `guardkit mcp wrap`.",
        "# Review every rule: the proxy hides and refuses any tool not listed here.",
        "budget = 1000",
        "scar_limit = 10",
    ]
    seen: set[str] = set()
    for server, names in tools.items():
        if names is None:
            lines.append(f"# {server!r} could not be asked for its tools: list them by hand.")
            continue
        for tool in names:
            if tool in seen:
                continue
            seen.add(tool)
            lines += ["", f"# from {server!r}", f"[tools.{json.dumps(tool)}]", "cost = 1"]
            if destructive(tool):
                lines.append("requires_approval = true")
    if not seen:
        lines += ["", "[tools]"]
    return "\n".join(lines) + "\n"


async def list_tools(entry: Mapping[str, Any], timeout: float) -> list[str]:
    """The tool names the server of ``entry`` lists, asked as its client would start it."""
    import anyio
    from mcp import Client, StdioServerParameters

    target: Any
    if "command" in entry:
        env = {**os.environ, **{str(k): str(v) for k, v in (entry.get("env") or {}).items()}}
        target = StdioServerParameters(
            command=str(entry["command"]),
            args=[str(a) for a in entry.get("args", [])],
            env=env,
            cwd=entry.get("cwd"),
        )
    else:
        target = str(entry["url"])
    with anyio.fail_after(timeout):
        async with Client(target) as client:
            return [tool.name for tool in (await client.list_tools()).tools]


def _indent(text: str) -> int:
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" ")
        if stripped and len(stripped) < len(line):
            return len(line) - len(stripped)
    return 2


def read_config(path: Path) -> tuple[dict[str, Any], str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WrapError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise WrapError(
            f"{path} is not plain JSON ({exc.msg}, line {exc.lineno}); guardkit edits plain "
            "JSON only: remove comments and trailing commas first"
        ) from exc
    if not isinstance(data, dict):
        raise WrapError(f"{path}: the configuration must be a JSON object")
    return data, text


def _write(path: Path, data: Mapping[str, Any], like: str) -> None:
    text = json.dumps(data, indent=_indent(like), ensure_ascii=False)
    if like.endswith("\n") or not like:
        text += "\n"
    temporary = path.with_name(path.name + ".guardkit-tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def apply(path: Path, plan: Plan, original_text: str, *, undo: bool) -> None:
    """Write ``plan``'s configuration over ``path`` (atomically): a wrap keeps the file as it
    was in ``CONFIG.guardkit-backup`` the first time; an undo removes that backup."""
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if not plan.changed:
        return
    if not undo and not backup.exists():
        backup.write_text(original_text, encoding="utf-8")
    _write(path, plan.config, original_text)
    if undo and backup.exists() and not any(a == "already" for a in plan.actions.values()):
        backup.unlink()
