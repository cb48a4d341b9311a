"""What both provider adapters share: optional SDK imports and checking tool calls before the guard.

Adapters keep the tool schemas of the turn they were last given and the parse failures of the
calls they returned, so that ``guardkit.loop`` can ask ``call_error(call)`` before it requests
anything: a call with broken JSON or arguments that break the schema is never requested or run.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from guardkit.protocols import ToolCall

from ._schema import validate

__all__ = ["CallChecks", "require"]


def require(module: str, extra: str) -> ModuleType:
    """Import an optional SDK, or fail with the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"this adapter needs the {module!r} package: pip install 'guardkit[{extra}]'"
        ) from exc


class CallChecks:
    """``call_error`` over the schemas given to the last turn (``guardkit.loop.ChecksCalls``)."""

    def __init__(self) -> None:
        self._schemas: dict[str, Mapping[str, Any]] = {}
        self._broken: dict[str, str] = {}

    def remember(self, tools: Sequence[Mapping[str, Any]]) -> None:
        self._schemas = {
            str(tool["name"]): tool.get("input_schema") or {"type": "object"} for tool in tools
        }

    def broken(self, call_id: str, problem: str) -> None:
        """Remember that call ``call_id`` could not be parsed."""
        self._broken[call_id] = problem

    def call_error(self, call: ToolCall) -> str | None:
        """Why ``call`` must not be requested, or ``None``.

        A tool without a schema is left to the guard: an unlisted tool is a tripwire there.
        """
        if call.id in self._broken:
            return self._broken.pop(call.id)
        schema = self._schemas.get(call.name)
        if schema is None:
            return None
        problems = validate(schema, call.args)
        return "; ".join(problems) if problems else None
