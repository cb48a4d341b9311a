"""Argument binding: the fast path agrees with ``inspect.Signature.bind`` on every call shape."""

from __future__ import annotations

import functools
import inspect
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from guardkit.tools.binding import CallShape, bind_call, jsonable

NAMES = ["a", "b", "c", "d"]


@st.composite
def signatures(draw: st.DrawFn) -> inspect.Signature:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=4))
    params: list[inspect.Parameter] = []
    seen_default = False
    keyword_only = False
    for name in names:
        keyword_only = keyword_only or draw(st.booleans())
        kind = (
            inspect.Parameter.KEYWORD_ONLY
            if keyword_only
            else inspect.Parameter.POSITIONAL_OR_KEYWORD
        )
        has_default = draw(st.booleans()) or (seen_default and not keyword_only)
        seen_default = seen_default or has_default
        default = draw(st.integers(0, 9)) if has_default else inspect.Parameter.empty
        params.append(inspect.Parameter(name, kind, default=default))
    if draw(st.booleans()):
        params.append(inspect.Parameter("rest", inspect.Parameter.VAR_KEYWORD))
    return inspect.Signature(params)


def _reference(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any] | None:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    return dict(bound.arguments)


@given(
    signatures(),
    st.lists(st.integers(), max_size=5),
    st.dictionaries(st.sampled_from([*NAMES, "z"]), st.integers(), max_size=4),
)
def test_fast_binding_matches_signature_bind(signature, args, kwargs):
    def func(*a: Any, **k: Any) -> None:
        return None

    func.__signature__ = signature  # type: ignore[attr-defined]
    shape = CallShape.of(func)
    expected = _reference(signature, tuple(args), kwargs)
    try:
        got: dict[str, Any] | None = bind_call(shape, None, tuple(args), kwargs)
    except TypeError:
        got = None
    assert got == expected


def test_bound_calls_drop_the_first_parameter():
    def method(self: Any, x: int, y: int = 2) -> None:
        return None

    shape = CallShape.of(method)
    assert bind_call(shape, object(), (1,), {}) == {"x": 1, "y": 2}
    assert bind_call(shape, None, ("s", 1), {"y": 3}) == {"self": "s", "x": 1, "y": 3}


def test_jsonable_forms():
    assert jsonable({1: float("nan"), "t": (1, {2})}) == {"1": "nan", "t": [1, [2]]}


@given(
    signatures(),
    st.lists(st.integers(), max_size=5),
    st.dictionaries(st.sampled_from([*NAMES, "z"]), st.integers(), max_size=4),
)
def test_a_call_that_does_not_bind_raises_pythons_own_type_error(signature, args, kwargs):
    namespace: dict[str, Any] = {}
    exec(f"def read_file{signature}: pass", namespace)
    tool = namespace["read_file"]
    try:
        tool(*args, **kwargs)
    except TypeError as exc:
        expected: str | None = str(exc)
    else:
        expected = None
    try:
        bind_call(CallShape.of(tool), None, tuple(args), kwargs)
    except TypeError as exc:
        got: str | None = str(exc)
    else:
        got = None
    assert got == expected


def test_a_wrong_keyword_on_a_guarded_tool_reads_as_python():
    import guardkit

    guard = guardkit.Guard(":memory:")
    guard.create_agent("bot", {"budget": 1, "tools": {}, "default_rule": {"cost": 0}})

    @guardkit.tool(guard=guard.agent("bot"))
    def read_file(path: str) -> str:
        return path

    class Files:
        @guardkit.tool(guard=guard.agent("bot"))
        def read(self, path: str) -> str:
            return path

    files = Files()
    for guarded, plain, args, kwargs in [
        (read_file, read_file.__wrapped__, (), {"pth": "x"}),
        (read_file, read_file.__wrapped__, (), {}),
        (files.read, functools.partial(Files.read.__wrapped__, files), ("a", "b"), {}),
    ]:
        expected = _error_of(plain, args, kwargs)
        assert _error_of(guarded, args, kwargs) == expected
    assert expected.endswith("Files.read() takes 2 positional arguments but 3 were given")
    # Python 3.13 adds "Did you mean 'path'?" after it, as it does for the plain function
    assert "read_file() got an unexpected keyword argument 'pth'" in _error_of(
        read_file, (), {"pth": "x"}
    )
    assert guard.log("bot")["records"][-1]["kind"] == "policy"  # nothing was requested


def _error_of(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    try:
        func(*args, **kwargs)
    except TypeError as exc:
        return str(exc)
    raise AssertionError("the call bound")
