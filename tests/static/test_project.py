"""Whole-project analysis on a fixture project written in the shapes real agent code has: a
tool list built in one package and handed to the model in another module, an agent loop whose
model call sits two methods away behind the project's own Protocol, a loop whose session
arrives as an unannotated parameter from another module, a loop bounded in the method it
calls; tests excluded by default; the cache re-analyses what a change affects."""

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
from guardkit.codemods.modules import is_test_path, module_name
from guardkit.codemods.runner import discover, scan_paths

DATA = Path(__file__).parent / "data" / "crossmodule"
EXPECTED = {
    ("shop/agent.py", 19, "GK101", "self.step"),
    ("shop/main.py", 7, "GK102", "completion"),
    ("shop/models.py", 11, "GK102", "litellm.completion"),
    ("shop/responder.py", 7, "GK101", "session.model.query"),
    ("shop/tools/catalog.py", 1, "GK201", "lookup_price"),
    ("shop/tools/orders.py", 4, "GK201", "cancel_order"),
}


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "shop_project"
    shutil.copytree(DATA, target)
    monkeypatch.chdir(target)
    return target


def _found(*args: str) -> set[tuple[str, int, str, str]]:
    result = CliRunner().invoke(scan, [".", "--format", "json", "--no-cache", *args])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    return {(f["path"], f["line"], f["rule"], f["symbol"]) for f in report["findings"]}


def test_flows_across_modules_are_seen(shop: Path) -> None:
    assert _found() == EXPECTED  # and shop/bounded.py's loop, bounded in step(), is not


def test_tests_are_excluded_unless_asked_for(shop: Path) -> None:
    with_tests = _found("--include-tests")
    assert with_tests - EXPECTED == {
        ("tests/test_agent.py", 5, "GK101", "litellm.completion"),
        ("tests/test_agent.py", 6, "GK102", "litellm.completion"),
    }


def test_json_paths_are_relative_to_the_root(shop: Path) -> None:
    assert all(not Path(path).is_absolute() for path, *_ in _found())


def test_the_test_module_rule() -> None:
    assert is_test_path("pkg/tests/helpers.py")
    assert is_test_path("conftest.py")
    assert is_test_path("pkg/test_agent.py")
    assert is_test_path("pkg/agent_test.py")
    assert not is_test_path("pkg/testing.py")
    assert not is_test_path("/src/tests/proj/agent.py", "/src/tests/proj")


def test_module_names_follow_packages() -> None:
    assert module_name(str(DATA / "shop" / "tools" / "catalog.py")) == "shop.tools.catalog"
    assert module_name(str(DATA / "shop" / "__init__.py")) == "shop"


def test_a_change_in_one_file_re_analyses_the_modules_it_affects(
    shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = discover(["."])
    cache = shop / ".cache"
    scan_paths(files, Config(), jobs=1, cache=ScanCache(cache, "x"))
    seen: list[str] = []
    real = runner.analyse_source

    def counting(data: bytes, path: str, config: Config, **kwargs: object) -> object:
        seen.append(Path(path).relative_to(shop).as_posix())
        return real(data, path, config, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "analyse_source", counting)
    warm = scan_paths(files, Config(), jobs=1, cache=ScanCache(cache, "x"))
    assert seen == []
    assert {f.rule for r in warm for f in r.findings} == {"GK101", "GK102", "GK201"}
    # the model implementation now asks the guard: the agent loop no longer reaches an
    # ungated model call, so agent.py is analysed again (and nothing unrelated is)
    models = shop / "shop" / "models.py"
    models.write_text(
        models.read_text()
        .replace("import litellm", "import guardkit\nimport litellm")
        .replace(
            "        return litellm",
            "        with guardkit.model_turn():\n            return litellm",
        )
    )
    after = scan_paths(files, Config(), jobs=1, cache=ScanCache(cache, "x"))
    assert "shop/models.py" in seen
    assert "shop/agent.py" in seen
    assert "shop/tools/catalog.py" not in seen
    rules = {(Path(r.path).name, f.rule) for r in after for f in r.findings}
    assert ("agent.py", "GK101") not in rules
    assert ("models.py", "GK102") not in rules
