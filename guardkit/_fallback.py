"""Where ``current_agent`` turns when no agent was set: a slot the ``guardkit`` package fills.

A leaf (it imports nothing from guardkit at run time), so ``import guardkit`` fills it with
``guardkit.configure``'s environment reader without loading the tool layer, and
``guardkit.tools.scope`` reads it without reaching up to ``guardkit.configure``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from guardkit.protocols import AgentGuard

__all__ = ["factory"]

#: Builds the process default on first need when nothing was set (None: nothing does).
factory: list[Callable[[], AgentGuard | None] | None] = [None]
