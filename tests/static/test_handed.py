"""What reaches a model travels between modules the way a value does (issue 20): a factory
returns a provider object (``make_model(cfg)``, ``get_provider(name, cfg)`` in a package's
``__init__``), a script beside the package hands it to an agent class, whose loop calls its
method; the model's text, parsed by a method of the agent, picks the action a registry runs
(``REGISTRY.get(decision["action"])``); a tool object a script hands to the loop function
(``converse(OpenAI(), FileTools(root))``) receives the tool name the model chose through that
parameter (``tools.call(item.name, ...)``). None of these modules imports a model client, so
each is found only by following the value from the one that does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

Found = Callable[[], set[tuple[str, int, str, str]]]


@pytest.fixture
def handed(data_project: Callable[[str], Path]) -> Path:
    return data_project("handed")


def _rules(found: Found, *rules: str) -> set[tuple[str, int, str, str]]:
    return {f for f in found() if f[2] in rules}


def test_a_model_handed_to_an_agent_by_a_script_makes_its_loop_a_model_loop(
    handed: Path, found: Found
) -> None:
    assert _rules(found, "GK101") == {
        ("agentx/react.py", 26, "GK101", "self.model.generate"),
    }


def test_a_stand_in_model_makes_no_model_loop(handed: Path, found: Found) -> None:
    run = handed / "run.py"
    run.write_text(
        run.read_text()
        .replace("from agentx.model import make_model", "from agentx.echo import EchoModel")
        .replace('make_model({"model": "llama3"})', "EchoModel()")
    )
    assert _rules(found, "GK101") == set()


def test_the_action_the_model_wrote_picks_the_registered_function_that_runs(
    handed: Path, found: Found
) -> None:
    assert _rules(found, "GK201", "GK202") == {
        ("agentx/react.py", 22, "GK202", "REGISTRY.get(decision['action'])"),
        ("agentx/actions.py", 15, "GK201", "shell"),
        ("agentx/actions.py", 20, "GK201", "ls"),
        ("agentx/actions.py", 25, "GK201", "finish"),
    }


def test_a_streamed_events_type_picks_a_handler_by_the_protocol_not_the_model(
    handed: Path, found: Found
) -> None:
    assert {f for f in found() if f[0] == "agentx/events.py" and f[2] != "GK102"} == set()
    events = handed / "agentx" / "events.py"
    events.write_text(
        "import json\n\n"
        + events.read_text().replace(
            "HANDLERS.get(event.type)", 'HANDLERS.get(json.loads(event.text)["kind"])'
        )
    )
    assert {(f[1], f[2]) for f in found() if f[0] == "agentx/events.py" and f[2] != "GK102"} == {
        (8, "GK201"),
        (12, "GK201"),
        (24, "GK202"),
    }


@pytest.fixture
def factories(data_project: Callable[[str], Path]) -> Path:
    return data_project("factories")


def test_a_provider_made_by_a_factory_in_a_package_init_is_followed_to_the_loop(
    factories: Path, found: Found
) -> None:
    assert found() == {
        ("bot/providers/claude.py", 12, "GK102", "self._client.messages.create"),
        ("bot/session.py", 27, "GK101", "self._turn"),
        ("bot/toolbox.py", 20, "GK201", "Fetch.__call__"),
        ("bot/toolbox.py", 28, "GK201", "Sleep.__call__"),
        ("bot/toolbox.py", 44, "GK202", "self._by_name.get(name)"),
    }


def test_a_factory_that_returns_no_model_object_is_not_followed(
    factories: Path, found: Found
) -> None:
    # the factory returns a stand-in with a ``complete`` of its own (``complete`` then names
    # two unrelated classes, so the call is not resolved by its name either)
    init = factories / "bot" / "providers" / "__init__.py"
    stand_in = (
        "\n\nclass EchoProvider:\n    def __init__(self, cfg):\n        self.cfg = cfg\n\n"
        "    async def complete(self, messages, tools):\n        return messages[-1]\n"
    )
    init.write_text(
        init.read_text().replace("return ClaudeProvider(cfg)", "return EchoProvider(cfg)")
        + stand_in
    )
    # no model loop through the factory; what ``_turn`` does with the reply (tool-use blocks
    # read out of it, their names handed to the toolbox) still shows a model's reply, so the
    # toolbox's dispatch and tools are found from the session's own code
    assert {f[2] for f in found()} == {"GK102", "GK201", "GK202"}


@pytest.fixture
def parameters(data_project: Callable[[str], Path]) -> Path:
    return data_project("parameters")


def test_a_tool_object_handed_to_the_loop_by_a_script_is_reached_through_the_parameter(
    parameters: Path, found: Found
) -> None:
    # ``converse(OpenAI(), FileTools("/srv"), ...)`` in main.py; ``tools.call(item.name, ...)``
    # in the loop: the name reaches ``FileTools.call``, whose ``getattr(self, f"tool_{name}")``
    # runs the methods that spelling can make
    assert _rules(found, "GK201", "GK202") == {
        ("assistant/tools.py", 11, "GK201", "FileTools.tool_list_dir"),
        ("assistant/tools.py", 14, "GK201", "FileTools.tool_delete"),
        ("assistant/tools.py", 29, "GK202", "getattr(self, f'tool_{name}', None)"),
    }


def test_a_tool_object_the_loop_is_not_handed_is_not_reached(
    parameters: Path, found: Found
) -> None:
    main = parameters / "main.py"
    main.write_text(main.read_text().replace('FileTools("/srv"), "tidy up"', 'None, "tidy up"'))
    assert _rules(found, "GK201", "GK202") == set()


def test_an_unaffixed_getattr_is_a_dispatch_without_naming_every_method(
    parameters: Path, found: Found
) -> None:
    tools = parameters / "assistant" / "tools.py"
    tools.write_text(tools.read_text().replace('f"tool_{name}"', "name"))
    assert _rules(found, "GK201", "GK202") == {
        ("assistant/tools.py", 29, "GK202", "getattr(self, name, None)"),
    }
