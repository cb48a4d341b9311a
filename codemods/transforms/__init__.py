"""guardkit's codemods, in the order ``guardkit fix`` applies them."""

from __future__ import annotations

from .add_tool_guard import AddToolGuard
from .base import FindingCodemod
from .bound_model_loops import BoundModelLoops
from .gate_model_calls import GateModelCalls

__all__ = ["TRANSFORMS", "AddToolGuard", "BoundModelLoops", "FindingCodemod", "GateModelCalls"]

TRANSFORMS: tuple[type[FindingCodemod], ...] = (BoundModelLoops, GateModelCalls, AddToolGuard)
