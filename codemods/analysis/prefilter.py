"""A cheap textual test that skips files which cannot contain findings.

A file is analysed only if it imports a model client, tool framework or guardkit (any module
named in the catalog), names a model endpoint (``/chat/completions``, ``/v1/messages``...: raw
HTTP), hands ``tools=``/``functions=`` to something, reads a tool choice out of a response
(``.tool_calls``, ``.choices[0].message``: a model call by a client the catalog does not know),
passes ``model=`` and ``messages=`` (a chat turn, whatever the client), decorates a function
with a decorator named for a tool (``@app.tool()``), or binds a tool-ish dispatch table
(``TOOLS = {``); the project index asks for more modules afterwards. Every
pattern starts with a literal (``import``, ``from``, ``=``) so the regular-expression engine can
skip ahead quickly: on CPython's ``Lib/``-sized trees this test costs about as much as reading
the files.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .catalog import MODEL_ENDPOINTS, Catalog

__all__ = ["might_match"]

_ASSIGN_DICT = re.compile(rb"=[ \t]*\{")
_TABLE_NAME = re.compile(rb"(?:tool|TOOL|Tool|function|FUNCTION)\w*[ \t]*$")
#: a keyword argument (PEP 8 spacing: no blanks around ``=``), not an assignment
_TOOLS_KEYWORD = re.compile(rb"(?:tools|functions)=[\[(\w]")
_ENDPOINTS = tuple(e.encode() for e in MODEL_ENDPOINTS)
_TABLE_WORDS = (b"tool", b"TOOL", b"Tool", b"function", b"FUNCTION")
#: a tool choice read out of a response (see ``shapes``): a model call by any client
_SHAPE_WORDS = (b"tool_calls", b"function_call", b"choices[")
_SHAPE_READ = re.compile(
    rb"\.tool_calls\b|\[[\"']tool_calls[\"']\]|\.function_call\b|\.choices\[0\]\.message"
)
#: a decorator named for registering a tool (``@app.tool()``, ``@register_tool``): a library
#: outside the catalog (see ``Guards.tool_decorator``)
_TOOL_DECORATOR = re.compile(rb"@[ \t]*(?:\w+\.)*(?:\w+_)?tool\b(?!\.)")
_BY_CATALOG: dict[int, tuple[Catalog, re.Pattern[bytes], re.Pattern[bytes]]] = {}


#: namespace packages: unrelated distributions share the top-level name (``google.protobuf``
#: beside ``google.genai``), so ``from google.X import`` counts only for the catalog's ``X``
_NAMESPACES = frozenset({"google"})


def _from_alternative(top: str, names: frozenset[str]) -> str:
    if top not in _NAMESPACES:
        return re.escape(top)
    subs = "|".join(sorted({re.escape(n.split(".")[1]) for n in names if n.startswith(f"{top}.")}))
    # ``from google import genai`` or a catalog sub-package (``import google.X`` binds
    # ``google`` itself: the ``import`` pattern keeps every one)
    return rf"{re.escape(top)}(?!\.)|{re.escape(top)}\.(?:{subs})"


@lru_cache(maxsize=8)
def _patterns(
    modules: frozenset[str], names: frozenset[str]
) -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    imports = "|".join(sorted(re.escape(m) for m in modules)).encode()
    froms = "|".join(sorted(_from_alternative(m, names) for m in modules)).encode()
    return re.compile(rb"import[ \t]+(?:" + imports + rb")"), re.compile(
        rb"from[ \t]+(?:" + froms + rb")"
    )


def _has_table(source: bytes) -> bool:
    if not any(word in source for word in _TABLE_WORDS):
        return False  # substring tests run at memchr speed; the regex below does not
    for match in _ASSIGN_DICT.finditer(source):
        start = match.start()
        if _TABLE_NAME.search(source, max(0, start - 80), start):
            return True
    return False


def might_match(source: bytes, catalog: Catalog) -> bool:
    """Whether ``source`` is worth parsing."""
    cached = _BY_CATALOG.get(id(catalog))
    if cached is None or cached[0] is not catalog:
        cached = _BY_CATALOG[id(catalog)] = (
            catalog,
            *_patterns(catalog.top_modules(), catalog.names()),
        )
    _, imports, froms = cached
    if imports.search(source) or froms.search(source):
        return True
    if any(endpoint in source for endpoint in _ENDPOINTS):
        return True
    if (b"tools=" in source or b"functions=" in source) and _TOOLS_KEYWORD.search(source):
        return True
    if any(word in source for word in _SHAPE_WORDS) and _SHAPE_READ.search(source):
        return True
    if b"messages=" in source and b"model=" in source:
        return True  # a chat turn by the keywords it is handed (see ``calls``)
    if b"tool" in source and _TOOL_DECORATOR.search(source):
        return True
    return _has_table(source)
