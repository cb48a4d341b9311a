"""The policy skeleton ``guardkit fix --write`` leaves beside the project it fixed.

It lists every tool the fix put behind ``guardkit.tool()`` (those whose names look destructive
with ``requires_approval = true``) and ``llm_turn`` with a ``max_calls``, in the TOML shape
``guardkit.load_policy`` reads. A skeleton to review, not a finished policy: costs are 1.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

__all__ = ["FILE_NAME", "is_destructive", "render_policy"]

FILE_NAME = "guardkit-policy.toml"
#: name parts of tools that change or spend something
DESTRUCTIVE = frozenset(
    {
        "delete", "remove", "rm", "unlink", "drop", "truncate", "wipe", "destroy", "kill",
        "terminate", "write", "overwrite", "edit", "update", "move", "rename", "upload",
        "send", "email", "post", "publish", "pay", "payment", "charge", "refund", "transfer",
        "purchase", "buy", "exec", "execute", "eval", "shell", "bash", "command",
        "subprocess", "deploy", "commit", "push", "merge", "install",
    }
)  # fmt: skip


def is_destructive(name: str) -> bool:
    """``delete_file``, ``sendEmail``, ``run_shell``: a part of the name is in DESTRUCTIVE."""
    parts = re.split(r"[_\W]+|(?<=[a-z0-9])(?=[A-Z])", name)
    return any(p.lower() in DESTRUCTIVE for p in parts if p)


def render_policy(tools: Iterable[str], max_turns: int) -> str:
    lines = [
        "# guardkit policy skeleton written by `guardkit fix`: review every rule before use.",
        "# Give it to the agent guard with GUARDKIT_POLICY=guardkit-policy.toml (docs/scan.md).",
        "budget = 1000",
        "",
        "[tools.llm_turn]",
        "cost = 1",
        f"max_calls = {max_turns}",
    ]
    for name in sorted(set(tools) - {"llm_turn"}):
        key = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)
        lines += ["", f"[tools.{key}]", "cost = 1"]
        if is_destructive(name):
            lines.append("requires_approval = true")
    return "\n".join(lines) + "\n"
