"""``[tool.guardkit]`` settings for scan and fix, read from the nearest ``pyproject.toml``.

Recognised keys (all optional)::

    [tool.guardkit]
    select = ["GK1", "GK201"]        # rule ids or prefixes; default: all
    ignore = ["GK302"]
    exclude = ["tests/fixtures/*"]   # fnmatch patterns on paths
    max-turns = 25                   # the bound BoundModelLoops inserts
    model-functions = ["mycorp.llm.complete"]
    tool-decorators = ["mycorp.agents.expose"]
    gates = ["mycorp.guard.Middleware"]   # objects that gate an agent's turns and tools

    [tool.guardkit.model-clients]    # constructor -> kind (anthropic, openai, langchain, ...)
    "mycorp.llm.Client" = "openai"

    [tool.guardkit.client-methods]   # kind -> extra method chains that call the model
    openai = ["ask"]
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .analysis.catalog import DEFAULT_CATALOG, Catalog

__all__ = ["Config", "find_pyproject", "load_config"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Config:
    """Resolved scan settings. Picklable, so it travels to worker processes."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_turns: int = 25
    catalog: Catalog = field(default_factory=lambda: DEFAULT_CATALOG)

    def enabled(self, rule_id: str) -> bool:
        """Whether findings of ``rule_id`` are reported (select, then ignore, by prefix)."""
        if self.select and not rule_id.startswith(self.select):
            return False
        return not (self.ignore and rule_id.startswith(self.ignore))

    def fingerprint(self) -> str:
        """A digest of everything that changes analysis results, for the cache key."""
        cat = self.catalog
        data = [
            sorted(cat.clients.items()),
            sorted((k, list(v)) for k, v in cat.methods.items()),
            sorted(cat.functions),
            sorted(cat.tool_decorators),
            sorted(cat.gates),
        ]
        return hashlib.sha1(json.dumps(data).encode(), usedforsecurity=False).hexdigest()[:16]


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start``."""
    here = start.resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _strings(raw: Any, key: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"[tool.guardkit] {key} must be a list of strings")
    return tuple(value)


def config_from_table(raw: dict[str, Any]) -> Config:
    """Build a ``Config`` from the ``[tool.guardkit]`` table; ``ValueError`` if malformed."""
    clients = raw.get("model-clients", {})
    methods = raw.get("client-methods", {})
    if not isinstance(clients, dict) or not isinstance(methods, dict):
        raise ValueError("[tool.guardkit] model-clients and client-methods must be tables")
    catalog = DEFAULT_CATALOG.extended(
        clients={str(k): str(v) for k, v in clients.items()},
        methods={str(k): [str(m) for m in v] for k, v in methods.items()},
        functions=_strings(raw, "model-functions"),
        tool_decorators=_strings(raw, "tool-decorators"),
        gates=_strings(raw, "gates"),
    )
    max_turns = raw.get("max-turns", 25)
    if not isinstance(max_turns, int) or max_turns < 1:
        raise ValueError("[tool.guardkit] max-turns must be a positive integer")
    return Config(
        select=_strings(raw, "select"),
        ignore=_strings(raw, "ignore"),
        exclude=_strings(raw, "exclude"),
        max_turns=max_turns,
        catalog=catalog,
    )


def load_config(pyproject: Path | None) -> Config:
    """Read ``[tool.guardkit]`` from ``pyproject`` (defaults when absent)."""
    if pyproject is None:
        return Config()
    with pyproject.open("rb") as fh:
        data = tomllib.load(fh)
    raw = data.get("tool", {}).get("guardkit", {})
    return config_from_table(raw if isinstance(raw, dict) else {})
