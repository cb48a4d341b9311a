"""A method called on a value of unknown kind (a backend a registry picked) reaches a model when
every concrete method of its name does (issue 20), however many classes define it, and a stub
of that name (a protocol's, an ABC's) runs nothing of its own: it stands for the
implementations; an ``@overload`` signature is no stub, the function is the def it types. A
stand-in among them (a backend that only echoes) still keeps the call from being a model's.
Which tools a model-chosen element runs is still resolved only when few class hierarchies
define the method, and a protocol's stub makes none."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]

REGISTRY = """\
BACKENDS = {}


def backend(name):
    def keep(cls):
        BACKENDS[name] = cls
        return cls
    return keep


def choose(name):
    return BACKENDS[name]
"""

OPENAI = """\
from openai import OpenAI

from registry import backend
{imports}
client = OpenAI()


@backend("{name}")
class {cls}Engine{bases}:
    def advance(self, history):
        reply = client.chat.completions.create(model="{name}", messages=history)
        return reply.choices[0].message
"""

SESSION = """\
from registry import choose


class Session:
    def __init__(self, name):
        self.engine = choose(name)()

    def converse(self, history):
        while history[-1].role != "assistant":
            history.append(self.engine.advance(history))
        return history
"""

PROTOCOL = """\
from typing import Protocol


class Engine(Protocol):
    def advance(self, history):
        ...
"""

ABSTRACT = """\
import abc


class Engine(abc.ABC):
    @abc.abstractmethod
    def advance(self, history):
        raise NotImplementedError
"""

OVERLOADED = """\
from typing import overload

from openai import OpenAI

from registry import backend

client = OpenAI()


@backend("typed")
class TypedEngine:
    @overload
    def advance(self, history: list[dict]) -> dict: ...

    @overload
    def advance(self, history: tuple[dict, ...]) -> dict: ...

    def advance(self, history):
        reply = client.chat.completions.create(model="typed", messages=list(history))
        return reply.choices[0].message
"""

ECHO = """\
from registry import backend


@backend("echo")
class EchoEngine:
    def advance(self, history):
        return history[-1]
"""


@pytest.fixture
def write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    monkeypatch.chdir(tmp_path)

    def files(**sources: str) -> None:
        for name, text in sources.items():
            (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))

    return files


def _engines(count: int, derived: bool = False) -> dict[str, str]:
    """``count`` engine modules; ``derived``: their classes derive from ``interface.Engine``."""
    names = ["alpha", "beta", "gamma", "delta", "epsilon"][:count]
    imports, bases = ("from interface import Engine\n", "(Engine)") if derived else ("", "")
    return {n: OPENAI.format(name=n, cls=n.title(), imports=imports, bases=bases) for n in names}


def _loops(found: Found) -> set[tuple[str, int]]:
    return {(p, line) for p, line, rule, _ in found() if rule == "GK101"}


@pytest.mark.parametrize("count", [3, 5])
def test_a_method_every_one_of_many_classes_defines_with_a_model_call_reaches_it(
    write: Callable[..., None], found: Found, count: int
) -> None:
    write(registry=REGISTRY, session=SESSION, **_engines(count))
    assert _loops(found) == {("session.py", 9)}


@pytest.mark.parametrize(
    ("interface", "derived", "count"),
    [(PROTOCOL, False, 1), (ABSTRACT, True, 2)],
    ids=["protocol", "abc"],
)
def test_a_stub_of_the_same_name_stands_for_the_implementations(
    write: Callable[..., None], found: Found, interface: str, derived: bool, count: int
) -> None:
    write(registry=REGISTRY, session=SESSION, interface=interface, **_engines(count, derived))
    assert _loops(found) == {("session.py", 9)}


def test_an_overloaded_method_is_its_implementation(
    write: Callable[..., None], found: Found
) -> None:
    write(registry=REGISTRY, session=SESSION, typed=OVERLOADED, interface=PROTOCOL)
    assert _loops(found) == {("session.py", 9)}


def test_a_call_through_a_protocol_reaches_every_implementation_stand_in_or_not(
    write: Callable[..., None], found: Found
) -> None:
    typed = SESSION.replace(
        "from registry import choose", "from interface import Engine\nfrom registry import choose"
    ).replace("self.engine = choose", "self.engine: Engine = choose")
    # the stand-in beside the real engine: ``advance`` is no name every definer's call reaches
    # a model through, the session is found through the protocol it imports
    engine = _engines(1)["alpha"] + ECHO.partition("\n\n\n")[2]
    write(registry=REGISTRY, session=typed, interface=PROTOCOL, alpha=engine)
    assert _loops(found) == {("session.py", 10)}


def test_a_stand_in_among_many_keeps_the_call_from_being_a_models(
    write: Callable[..., None], found: Found
) -> None:
    write(registry=REGISTRY, session=SESSION, echo=ECHO, interface=PROTOCOL, **_engines(3))
    assert _loops(found) == set()


ACTIONS = """\
import subprocess
from typing import Protocol


class Action(Protocol):
    def perform(self, arguments): ...


class Shell:
    def perform(self, arguments):
        return subprocess.run(arguments["cmd"], shell=True).stdout


class Remove:
    def perform(self, arguments):
        subprocess.run(["rm", arguments["path"]])
"""

DISPATCH = """\
import json

from openai import OpenAI

client = OpenAI()


def run(messages, actions):
    reply = client.chat.completions.create(model="m", messages=messages, tools=[])
    for call in reply.choices[0].message.tool_calls:
        actions[call.function.name].perform(json.loads(call.function.arguments))
"""

THIRD = """

class Echo:
    def perform(self, arguments):
        print(arguments)
"""


def _tools(found: Found) -> set[tuple[str, int]]:
    return {(p, line) for p, line, rule, _ in found() if rule == "GK201"}


def test_a_protocols_stub_makes_no_hierarchy_of_the_tools_a_chosen_element_runs(
    write: Callable[..., None], found: Found
) -> None:
    write(actions=ACTIONS, agent=DISPATCH)
    assert _tools(found) == {("actions.py", 10), ("actions.py", 15)}


def test_a_method_three_unrelated_classes_define_names_no_tool_of_a_chosen_element(
    write: Callable[..., None], found: Found
) -> None:
    write(actions=ACTIONS + THIRD, agent=DISPATCH)
    assert _tools(found) == set()
