"""A cheap textual test that skips files which cannot contain findings.

A file is analysed only if it imports a model client, tool framework or guardkit (any module named
in the catalog), or binds a tool-ish dispatch table (``TOOLS = {``). Most files of a large tree are
rejected by one regular-expression search, without being parsed.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .catalog import Catalog  # noqa: TID251

__all__ = ["might_match"]

_TABLE = r"\w*(?:tool|TOOL|Tool|function|FUNCTION)\w*\s*=\s*\{"


@lru_cache(maxsize=8)
def _pattern(modules: frozenset[str]) -> re.Pattern[bytes]:
    names = "|".join(sorted(re.escape(m) for m in modules))
    imports = rf"^[ \t]*(?:from|import)[ \t]+(?:{names})\w*\b"
    return re.compile(f"(?:{imports})|(?:{_TABLE})".encode(), re.MULTILINE)


def might_match(source: bytes, catalog: Catalog) -> bool:
    """Whether ``source`` is worth parsing."""
    return _pattern(catalog.top_modules()).search(source) is not None
