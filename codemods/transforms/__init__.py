"""guardkit's codemods, in the order ``guardkit fix`` applies them."""

from __future__ import annotations

from .add_tool_guard import AddToolGuard
from .attach_integrations import AttachIntegrations
from .base import FindingCodemod
from .bound_model_loops import BoundModelLoops
from .gate_model_calls import GateModelCalls

__all__ = [
    "TRANSFORMS",
    "AddToolGuard",
    "AttachIntegrations",
    "BoundModelLoops",
    "FindingCodemod",
    "GateModelCalls",
]

#: framework integrations first: the tools and runs they gate need no decorator or gate after
TRANSFORMS: tuple[type[FindingCodemod], ...] = (
    AttachIntegrations,
    BoundModelLoops,
    GateModelCalls,
    AddToolGuard,
)
