"""A loop is a model loop when what it calls reaches a model call in another module of the
project, however it is reached (issue 20): a helper whose client the catalog does not know but
whose reply is read for tool calls or that is handed ``model=`` and ``messages=``, an instance
called through its ``__call__`` (held in an attribute set by a base class, or returned by a
factory of another module), a function kept in an attribute or passed as an argument. Decoys: a
message built with ``.tool_calls.append``, a function reference that reaches no model, a token
counter handed the conversation. On a warm run, editing the helper's module changes the finding
in the loop's module."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from guardkit.codemods import runner
from guardkit.codemods.cache import ScanCache
from guardkit.codemods.cli import scan
from guardkit.codemods.config import Config
from guardkit.codemods.runner import discover, scan_paths

DATA = Path(__file__).parent / "data" / "reach"
EXPECTED = {
    # an unknown client, recognised by the tool calls read off its reply, one module away
    ("desk/loop.py", 5, "GK101", "next_action"),
    ("desk/step.py", 7, "GK102", "_client.chat"),
    # an unknown client handed a model and the conversation (not the token counter beside it)
    ("desk/chat.py", 11, "GK102", "self.chat.get_response"),
    ("desk/chat.py", 18, "GK102", "self.chat.beta.replies.stream"),
    ("desk/session.py", 6, "GK101", "handler.turn"),
    # ``self.brain`` set by the base class from an annotated parameter: ``Brain.__call__``
    ("studio/agent.py", 11, "GK101", "self.brain"),
    ("studio/llm.py", 7, "GK102", "client.chat.completions.create"),
    # an imported function kept in an attribute, passed as an argument; a factory's instance
    ("studio/pipeline.py", 10, "GK101", "self.step"),
    ("studio/pipeline.py", 15, "GK101", "step"),
    ("studio/pipeline.py", 25, "GK101", "brain"),
    # a folder of scripts: an instance of a class imported from a sibling (not Clock's loop)
    ("scripts/chatter.py", 8, "GK102", "client.chat.completions.create"),
    ("scripts/runner.py", 10, "GK101", "self.chatter"),
}


@pytest.fixture
def reach(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "reach_project"
    shutil.copytree(DATA, target)
    monkeypatch.chdir(target)
    return target


def _findings(results: list[runner.FileResult], root: Path) -> set[tuple[str, int, str]]:
    return {
        (Path(r.path).relative_to(root).as_posix(), f.line, f.rule)
        for r in results
        for f in r.findings
    }


def test_model_calls_are_reached_across_modules(reach: Path) -> None:
    result = CliRunner().invoke(scan, [".", "--format", "json", "--no-cache"])
    assert result.exit_code == 1, result.output
    found = {
        (f["path"], f["line"], f["rule"], f["symbol"])
        for f in json.loads(result.output)["findings"]
    }
    # and desk/replay.py's loop (it builds messages), Handler.budget (it counts tokens) and
    # pipeline.tail (it logs) are not
    assert found == EXPECTED


class _Counting:
    """Records the paths ``analyse_source`` is run on."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seen: list[str] = []
        self.real = runner.analyse_source

    def __call__(self, data: bytes, path: str, config: Config, **kwargs: object) -> object:
        self.seen.append(Path(path).relative_to(self.root).as_posix())
        return self.real(data, path, config, **kwargs)  # type: ignore[arg-type]


def test_editing_the_helper_module_changes_the_loop_finding_on_a_warm_run(
    reach: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = discover(["."])
    cache = reach / ".cache"
    # the helper starts without a model call: no loop reaches one
    llm = reach / "studio" / "llm.py"
    llm.write_text(llm.read_text().replace("return complete(messages)", "return messages"))
    first = _findings(scan_paths(files, Config(), jobs=1, cache=ScanCache(cache, "x")), reach)
    assert ("studio/agent.py", 11, "GK101") not in first
    assert ("desk/loop.py", 5, "GK101") in first
    counting = _Counting(reach)
    monkeypatch.setattr(runner, "analyse_source", counting)
    warm = _findings(scan_paths(files, Config(), jobs=1, cache=ScanCache(cache, "x")), reach)
    assert counting.seen == []
    assert warm == first
    # module B gains the model call: module A's loop is reported, from the cache's view of A
    llm.write_text(llm.read_text().replace("return messages", "return complete(messages)"))
    gained = _findings(scan_paths(files, Config(), jobs=1, cache=ScanCache(cache, "x")), reach)
    assert {"studio/llm.py", "studio/agent.py"} <= set(counting.seen)
    assert "desk/loop.py" not in counting.seen
    assert ("studio/agent.py", 11, "GK101") in gained
    assert ("studio/pipeline.py", 25, "GK101") in gained
    # module B stops reading tool calls off the reply: it is no model call, A's loop is none
    counting.seen.clear()
    step = reach / "desk" / "step.py"
    step.write_text(step.read_text().replace("reply.tool_calls", "reply.lines"))
    lost = _findings(scan_paths(files, Config(), jobs=1, cache=ScanCache(cache, "x")), reach)
    assert "desk/loop.py" in counting.seen
    assert "studio/agent.py" not in counting.seen
    assert ("desk/loop.py", 5, "GK101") not in lost
    assert ("desk/step.py", 7, "GK102") not in lost
    assert ("studio/agent.py", 11, "GK101") in lost
