"""Resolve local names to qualified names through a module's imports (aliases and relative
imports included)."""

from __future__ import annotations

import ast

__all__ = ["ImportMap"]


def _base(module: str, is_package: bool, level: int) -> str | None:
    """The package a relative import of ``level`` dots starts from, inside ``module``."""
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        if level - 1 > len(parts):
            return None
        parts = parts[: len(parts) - (level - 1)]
    return ".".join(parts)


class ImportMap:
    """``import openai as oa`` makes ``oa.OpenAI`` resolve to ``openai.OpenAI``; in module
    ``pkg.agent``, ``from .tools import bash`` makes ``bash`` resolve to ``pkg.tools.bash``."""

    def __init__(
        self,
        nodes: list[ast.Import | ast.ImportFrom],
        module: str = "",
        is_package: bool = False,
        known: frozenset[str] = frozenset(),
    ) -> None:
        self.names: dict[str, str] = {}
        #: local names bound by relative imports (``from .tools import search``): the project's
        self.relative: set[str] = set()
        for node in sorted(nodes, key=lambda n: (n.lineno, n.col_offset)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        self.names[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        self.names[top] = top
                continue
            source = node.module
            if node.level:
                base = _base(module, is_package, node.level)
                if base is None:
                    continue
                source = ".".join(p for p in (base, node.module) if p)
            if not source:
                continue
            for alias in node.names:
                if alias.name != "*":
                    self.names[alias.asname or alias.name] = f"{source}.{alias.name}"
                    if node.level:
                        self.relative.add(alias.asname or alias.name)
        if known:
            self._canonical(known)

    def resolve(self, name: str | None) -> str | None:
        """The qualified name for a dotted local name, or ``None`` if its root is not imported."""
        if name is None:
            return None
        root, _, rest = name.partition(".")
        target = self.names.get(root)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target

    def _canonical(self, known: frozenset[str]) -> None:
        """Import a library's name where it is defined as the name it is known by:
        ``from camel.toolkits.function_tool import FunctionTool`` is
        ``camel.toolkits.FunctionTool`` when that is ``known`` (a package re-exports what its
        submodules define)."""
        for local, target in self.names.items():
            if local in self.relative or target in known:
                continue
            module, _, name = target.rpartition(".")
            parts = module.split(".")
            for end in range(len(parts) - 1, 0, -1):
                shorter = ".".join([*parts[:end], name])
                if shorter in known:
                    self.names[local] = shorter
                    break
