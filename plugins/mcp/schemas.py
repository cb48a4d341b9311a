"""The upstream's tool list as the proxy keeps it: names and input schemas, refreshed on change.

Arguments are checked against the tool's ``inputSchema`` before the guard is asked, so a call
the upstream would reject anyway is neither recorded, charged nor forwarded: the client is told
what is wrong and that nothing was done.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import jsonschema
from jsonschema.exceptions import SchemaError
from mcp.types import ListToolsResult, PaginatedRequestParams, Tool

__all__ = ["ToolSchemas"]

log = logging.getLogger("guardkit.mcp")

#: A listing that never ends must not hang a call: stop after this many pages.
_PAGE_CAP = 100

ListPage = Callable[[PaginatedRequestParams | None], Awaitable[ListToolsResult]]


class ToolSchemas:
    """Input-schema validators by tool name, filled from ``tools/list`` pages."""

    def __init__(self) -> None:
        self._validators: dict[str, Any] = {}
        #: Names the upstream listed more than once in one page: refused, never guessed at.
        self._duplicates: set[str] = set()
        self._complete = False

    def forget(self) -> None:
        """The upstream's tools changed: read them again before the next check."""
        self._validators.clear()
        self._duplicates.clear()
        self._complete = False

    def learn(self, tools: list[Tool]) -> None:
        seen: set[str] = set()
        for tool in tools:
            if tool.name in seen and tool.name not in self._duplicates:
                log.warning(
                    "the upstream lists %r more than once: hidden, and its calls refused",
                    tool.name,
                )
                self._duplicates.add(tool.name)
            seen.add(tool.name)
            self._validators[tool.name] = _validator(tool.input_schema)

    def duplicated(self, name: str) -> bool:
        """Whether the upstream listed ``name`` more than once (which schema holds is unknown)."""
        return name in self._duplicates

    async def problem(
        self, list_page: ListPage, name: str, arguments: Mapping[str, Any]
    ) -> str | None:
        """Why ``arguments`` don't fit tool ``name``'s schema, or ``None`` (unknown tool too:
        the guard decides about tools, this only checks arguments)."""
        if name not in self._validators and not self._complete:
            try:
                await self._load(list_page)
            except Exception as exc:  # noqa: BLE001 - the call itself will meet the failure
                log.warning("could not list the upstream's tools to check arguments: %s", exc)
                return None
        validator = self._validators.get(name)
        if validator is None or validator.is_valid(arguments):
            return None
        errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
        if not errors:
            return None
        return "; ".join(
            f"{'.'.join(str(p) for p in error.path) or 'arguments'}: {error.message}"
            for error in errors
        )

    async def _load(self, list_page: ListPage) -> None:
        cursor: str | None = None
        for _ in range(_PAGE_CAP):
            # ``list_page`` learns each page it reads (the proxy's reader vets it too).
            page = await list_page(PaginatedRequestParams(cursor=cursor) if cursor else None)
            cursor = page.next_cursor
            if not cursor:
                break
        self._complete = True


def _validator(schema: dict[str, Any]) -> Any:
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
    except SchemaError:
        # A schema we can't read is the upstream's business: let it validate its own input.
        return None
    return cls(schema)
