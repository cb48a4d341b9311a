"""guardkit's codemods, in the order ``guardkit fix`` applies them."""

from __future__ import annotations

from .add_tool_guard import AddToolGuard  # noqa: TID251
from .base import FindingCodemod  # noqa: TID251
from .bound_model_loops import BoundModelLoops  # noqa: TID251
from .gate_model_calls import GateModelCalls  # noqa: TID251

__all__ = ["TRANSFORMS", "AddToolGuard", "BoundModelLoops", "FindingCodemod", "GateModelCalls"]

TRANSFORMS: tuple[type[FindingCodemod], ...] = (BoundModelLoops, GateModelCalls, AddToolGuard)
