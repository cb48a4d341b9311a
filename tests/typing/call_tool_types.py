"""mypy-only: ``guardkit.call_tool`` gives the tool's result or the refusal's shape."""

from __future__ import annotations

from typing import assert_type

import guardkit
from guardkit import Refusal


def count(n: int) -> int:
    return n


async def acount(n: int) -> int:
    return n


def blocks(found: Refusal) -> list[dict[str, str]]:
    return [{"type": "text", "text": found.text}]


async def main() -> None:
    plain: int | str = guardkit.call_tool("count", '{"n": 1}', count)
    shaped: int | list[dict[str, str]] = guardkit.call_tool("count", {}, count, on_refusal=blocks)
    awaited: int | str = await guardkit.acall_tool("acount", {"n": 1}, acount)
    print(plain, shaped, awaited)
    assert_type(await guardkit.acall_tool("acount", {"n": 1}, acount), int | str)
    assert_type(guardkit.call_tool("count", {}, count, on_refusal=blocks), int | list[dict[str, str]])
