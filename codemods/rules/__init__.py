"""The registered static rules, in id order."""

from __future__ import annotations

from .base import Invalid, Rule, Valid  # noqa: TID251
from .denial_escapes_loop import DenialEscapesLoop  # noqa: TID251
from .model_supplied_cost import ModelSuppliedCost  # noqa: TID251
from .unbounded_model_loop import UnboundedModelLoop  # noqa: TID251
from .ungated_model_call import UngatedModelCall  # noqa: TID251
from .unguarded_tool import UnguardedTool  # noqa: TID251
from .unguarded_tool_dispatch import UnguardedToolDispatch  # noqa: TID251

__all__ = ["RULES", "RULES_BY_ID", "Invalid", "Rule", "Valid"]

RULES: tuple[type[Rule], ...] = (
    UnboundedModelLoop,
    UngatedModelCall,
    UnguardedTool,
    UnguardedToolDispatch,
    ModelSuppliedCost,
    DenialEscapesLoop,
)
RULES_BY_ID: dict[str, type[Rule]] = {rule.ID: rule for rule in RULES}
