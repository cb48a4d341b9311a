"""guardkit's codemods, in the order ``guardkit fix`` applies them."""

from __future__ import annotations

from .add_tool_guard import AddToolGuard
from .attach_integrations import AttachIntegrations
from .base import FindingCodemod
from .bound_model_loops import BoundModelLoops
from .gate_model_calls import GateModelCalls
from .guard_dispatch import GuardDispatch

__all__ = [
    "TRANSFORMS",
    "AddToolGuard",
    "AttachIntegrations",
    "BoundModelLoops",
    "FindingCodemod",
    "GateModelCalls",
    "GuardDispatch",
]

#: framework integrations first: the tools and runs they gate need no decorator or gate after;
#: dispatch sites before the decorators (a dispatch of guarded tools is no GK202 any more)
TRANSFORMS: tuple[type[FindingCodemod], ...] = (
    AttachIntegrations,
    BoundModelLoops,
    GateModelCalls,
    GuardDispatch,
    AddToolGuard,
)
