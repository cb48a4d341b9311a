"""Binding a tool call's arguments to its signature (read once) and recording them as JSON."""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["CallShape", "bind_call", "jsonable"]

_SIMPLE = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_CLASS_FIRST = frozenset({"cls", "mcs", "metacls"})


@dataclass(frozen=True, slots=True, kw_only=True)
class _Plain:
    """A signature with only named parameters, bound without ``Signature.bind`` (2-3x faster)."""

    positional: tuple[str, ...]
    names: frozenset[str]
    defaults: dict[str, Any]

    @classmethod
    def of(cls, signature: inspect.Signature) -> _Plain | None:
        params = list(signature.parameters.values())
        if any(p.kind not in _SIMPLE for p in params):
            return None
        return cls(
            positional=tuple(
                p.name for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
            ),
            names=frozenset(p.name for p in params),
            defaults={p.name: p.default for p in params if p.default is not p.empty},
        )

    def bind(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any] | None:
        """The bound arguments, or None when the call is malformed (``Signature.bind`` says why)."""
        if len(args) > len(self.positional):
            return None
        out = dict(zip(self.positional, args, strict=False))
        for key, value in kwargs.items():
            if key in out or key not in self.names:
                return None
            out[key] = value
        if len(out) < len(self.names):
            for name in self.names - out.keys():
                if name not in self.defaults:
                    return None
                out[name] = self.defaults[name]
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class CallShape:
    """A tool's signature, read once at decoration time."""

    #: The signature as declared (for functions and static methods).
    full: inspect.Signature
    #: Without the first parameter (``self``/``cls``), for calls bound to an instance or class.
    bound: inspect.Signature
    plain_full: _Plain | None = None
    plain_bound: _Plain | None = None
    #: The first parameter is a class method's ``cls`` (see ``bind_call``).
    class_first: bool = False
    #: The function's ``__qualname__``, as Python's own argument errors name it.
    qualname: str = "tool"

    @classmethod
    def of(cls, func: Callable[..., Any]) -> CallShape:
        full = inspect.signature(func)
        params = list(full.parameters.values())
        bound = full.replace(parameters=params[1:])
        first = params[0] if params else None
        class_first = first is not None and first.name in _CLASS_FIRST and first.kind in _POSITIONAL
        return cls(
            full=full,
            bound=bound,
            plain_full=_Plain.of(full),
            plain_bound=_Plain.of(bound),
            class_first=class_first,
            qualname=str(getattr(func, "__qualname__", None) or getattr(func, "__name__", "tool")),
        )


def bind_call(
    shape: CallShape, instance: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """Bind a call to the signature, defaults applied; raises ``TypeError`` as the call would.

    ``cls`` is never an argument: ``@classmethod`` above ``@guardkit.tool`` binds the class
    through the wrapper before Python 3.13, and passes it as the first argument from 3.13 on
    (classmethod no longer chains ``__get__``); both record the same input.
    """
    if instance is None and shape.class_first and args and isinstance(args[0], type):
        instance, args = args[0], args[1:]
    plain = shape.plain_full if instance is None else shape.plain_bound
    if plain is not None:
        found = plain.bind(args, kwargs)
        if found is not None:
            return found
    signature = shape.full if instance is None else shape.bound
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        full = args if instance is None else (instance, *args)
        raise _python_error(shape, full, kwargs) from None
    bound.apply_defaults()
    return dict(bound.arguments)


def _python_error(shape: CallShape, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> TypeError:
    """The ``TypeError`` Python raises for this call: ``read_file() got an unexpected keyword
    argument 'pth'``, not ``Signature.bind``'s wording, found by calling an empty function with the
    tool's parameters (names, kinds and which have defaults; nothing of the tool runs)."""
    params = [
        p.replace(annotation=p.empty, default=None if p.default is not p.empty else p.empty)
        for p in shape.full.parameters.values()
    ]
    bare = shape.full.replace(parameters=params, return_annotation=inspect.Signature.empty)
    namespace: dict[str, Any] = {}
    exec(f"def stub{bare}: pass", namespace)  # noqa: S102 - only names and kinds, no user code
    stub = namespace["stub"]
    stub.__name__ = shape.qualname.rpartition(".")[2]
    stub.__qualname__ = shape.qualname
    try:
        stub(*args, **kwargs)
    except TypeError as exc:
        return exc
    return TypeError(f"{shape.qualname}() got arguments its signature does not accept")


def jsonable(value: Any) -> Any:
    """The JSON form recorded in the ledger: paths as strings, other objects by ``repr``."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(item) for item in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return repr(value)
