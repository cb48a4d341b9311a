"""The runner: cache (stat, then content hash), parallel workers, one result per file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from guardkit.codemods import runner
from guardkit.codemods import scan as api_scan
from guardkit.codemods.cache import ScanCache
from guardkit.codemods.config import Config
from guardkit.codemods.runner import discover, scan_paths


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records every file the runner actually analyses (in-process, jobs=1)."""
    seen: list[str] = []
    real = runner.analyse_source

    def counting(data: bytes, path: str, config: Config, **kwargs: object) -> object:
        seen.append(Path(path).name)
        return real(data, path, config, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "analyse_source", counting)
    return seen


def test_warm_cache_reads_nothing_and_returns_the_same(project: Path, parses: list[str]) -> None:
    files = discover(["src"])
    cold = scan_paths(files, Config(), jobs=1, cache=ScanCache(project / "c", "x"))
    assert sorted(parses) == ["agent.py", "util.py"]
    parses.clear()
    warm = scan_paths(files, Config(), jobs=1, cache=ScanCache(project / "c", "x"))
    assert parses == []
    assert all(r.cached for r in warm)
    assert [r.findings for r in warm] == [r.findings for r in cold]


def test_touched_but_unchanged_file_is_not_parsed_again(project: Path, parses: list[str]) -> None:
    files = discover(["src"])
    scan_paths(files, Config(), jobs=1, cache=ScanCache(project / "c", "x"))
    agent = project / "src" / "agent.py"
    os.utime(agent, ns=(1, 1))
    parses.clear()
    scan_paths(files, Config(), jobs=1, cache=ScanCache(project / "c", "x"))
    assert parses == []
    agent.write_text(agent.read_text() + "\n# edited\n")
    scan_paths(files, Config(), jobs=1, cache=ScanCache(project / "c", "x"))
    assert parses == ["agent.py"]


def test_config_change_invalidates_the_cache(project: Path, parses: list[str]) -> None:
    files = discover(["src"])
    scan_paths(files, Config(), jobs=1, cache=ScanCache(project / "c", "one"))
    parses.clear()
    scan_paths(files, Config(), jobs=1, cache=ScanCache(project / "c", "two"))
    assert sorted(parses) == ["agent.py", "util.py"]


def test_parallel_equals_serial(project: Path) -> None:
    for n in range(80):
        (project / "src" / f"m{n}.py").write_text((project / "src" / "agent.py").read_text())
    files = discover(["src"])
    serial = scan_paths(files, Config(), jobs=1)
    parallel = scan_paths(files, Config(), jobs=2)
    assert parallel == serial
    assert sum(len(r.findings) for r in parallel) == 2 * 81


def test_an_internal_error_in_one_file_does_not_stop_the_run(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = runner.analyse_source

    def flaky(data: bytes, path: str, config: Config, **kwargs: object) -> object:
        if path.endswith("util.py"):
            raise RuntimeError("boom")
        return real(data, path, config, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "analyse_source", flaky)
    results = scan_paths(discover(["src"]), Config(), jobs=1)
    assert [r.error for r in results] == [None, "internal error: RuntimeError: boom"]
    assert results[0].findings


def test_discover_skips_hidden_folders_and_honours_exclude(project: Path) -> None:
    (project / ".venv").mkdir()
    (project / ".venv" / "x.py").write_text("")
    assert [Path(p).name for p in discover(["."])] == ["agent.py", "util.py"]
    assert [Path(p).name for p in discover(["."], ("*/util.py",))] == ["agent.py"]


def test_public_api(project: Path) -> None:
    results = api_scan("src")
    assert [Path(r.path).name for r in results] == ["agent.py", "util.py"]
    assert results[1].skipped  # the prefilter rejected it without parsing


def test_selection_is_applied_after_the_cache(project: Path) -> None:
    files = discover(["src"])
    only_loops = Config(select=("GK101",))
    first = scan_paths(files, only_loops, jobs=1, cache=ScanCache(project / "c", "x"))
    assert {f.rule for r in first for f in r.findings} == {"GK101"}
    everything = scan_paths(files, Config(), jobs=1, cache=ScanCache(project / "c", "x"))
    assert all(r.cached for r in everything)
    assert {f.rule for r in everything for f in r.findings} == {"GK101", "GK102"}
