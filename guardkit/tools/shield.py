"""Finish an awaitable even while the task awaiting it is being cancelled.

A tool call that is cancelled (a framework cancelling its sibling calls, a caller's
``asyncio.wait_for`` running out) still owes the guard its one outcome: ``shielded`` runs the
report to its end, then lets the cancellation go on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["shielded"]

T = TypeVar("T")


async def shielded(awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` to its end; a cancellation meanwhile is raised once it is done."""
    task = asyncio.ensure_future(awaitable)
    cancelled = False
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done() and not task.cancelled():
                result = task.result()
                break
            if task.cancelled():
                raise
            cancelled = True
            continue
        break
    if cancelled:
        raise asyncio.CancelledError
    return result
