"""The classes a model's structured output is parsed into, and the calls that run them.

A model call told the class of its reply (``response_model=Action`` for instructor,
``response_format=``/``text_format=`` for OpenAI's ``parse``, ``output_type=`` for an agent)
returns an instance of that class, or of a class one of its fields is annotated with
(``action: Union[RunShell, WriteNote]``). When code calls a run method (``execute``, ``run``,
``__call__``...) on that reply, the model chose what runs: each class of the output that has the
method is a tool, and the call a dispatch when the model can choose among more than one.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .reply import RUN_METHODS, Reply
from .summary import qualified
from .tree import Tree
from .values import Values

__all__ = ["OUTPUT_KEYWORDS", "structured_runs"]

#: keywords that tell a model call (or the agent that makes it) the class of its reply
OUTPUT_KEYWORDS = frozenset(
    {"response_model", "response_format", "text_format", "output_type", "result_type"}
)


def structured_runs(reply: Reply, values: Values) -> Iterator[tuple[ast.Call, tuple[str, ...]]]:
    """Each call of a run method on the model's reply, with the ``type:`` refs of the output
    classes' methods it can run (only those of classes this module defines)."""
    tree = reply.tree
    outputs = _output_classes(tree, values.classes)
    if not outputs:
        return
    for call in tree.nodes(ast.Call):
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in RUN_METHODS):
            continue
        if not reply.derived(func.value):
            continue
        methods = (values.method_of(c, func.attr) for c in outputs)
        owners = {tree.parent(m) for m in methods if m is not None}
        refs = sorted(
            f"type:{qualified(values.module, o.name)}.{func.attr}"
            for o in owners
            if isinstance(o, ast.ClassDef)
        )
        if refs:
            yield call, tuple(refs)


def _output_classes(tree: Tree, classes: dict[str, ast.ClassDef]) -> list[ast.ClassDef]:
    """The module's classes a structured output can be: those named by an output keyword of
    any call, and, transitively, those their fields are annotated with."""
    todo = [
        kw.value
        for call in tree.nodes(ast.Call)
        for kw in call.keywords
        if kw.arg in OUTPUT_KEYWORDS
    ]
    found: dict[str, ast.ClassDef] = {}
    while todo:
        for name in _named(todo.pop()):
            cls = classes.get(name)
            if cls is None or name in found:
                continue
            found[name] = cls
            todo += [s.annotation for s in cls.body if isinstance(s, ast.AnnAssign)]
    return list(found.values())


def _named(annotation: ast.expr) -> Iterator[str]:
    """The plain names an annotation mentions (``Union[A, B]``, ``A | None``, ``list[A]``,
    ``"A"``)."""
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                written = ast.parse(node.value.strip(), mode="eval").body
            except SyntaxError:
                continue
            yield from _named(written)
