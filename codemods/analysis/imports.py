"""Resolve local names to qualified names through a module's imports (aliases included)."""

from __future__ import annotations

import ast

__all__ = ["ImportMap"]


class ImportMap:
    """``import openai as oa`` makes ``oa.OpenAI`` resolve to ``openai.OpenAI``."""

    def __init__(self, nodes: list[ast.Import | ast.ImportFrom]) -> None:
        self.names: dict[str, str] = {}
        for node in sorted(nodes, key=lambda n: (n.lineno, n.col_offset)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.names[top] = top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def resolve(self, name: str | None) -> str | None:
        """The qualified name for a dotted local name, or ``None`` if its root is not imported."""
        if name is None:
            return None
        root, _, rest = name.partition(".")
        target = self.names.get(root)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target
