"""Path checks: an adversarial corpus, each denied case proving the tool body never ran."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import guardkit
from guardkit import PathRule, PolicyError, ToolDenied


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/allowed (the root) with files and links, tmp/outside, tmp/allowed_evil."""
    root, outside = tmp_path / "allowed", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    (root / ".git").mkdir()
    outside.mkdir()
    (tmp_path / "allowed_evil").mkdir()
    for name in ("a.txt", "sub/b.txt", "secret.pem", ".git/config"):
        (root / name).write_text(name)
    (outside / "secret.txt").write_text("secret")
    (tmp_path / "allowed_evil" / "x.txt").write_text("x")
    links = {
        "link_out": outside,
        "link_file": outside / "secret.txt",
        "dangling": outside / "created.txt",
        "rel_up": Path("../outside"),
        "abs_etc": Path("/etc"),
        "loop1": root / "loop2",
        "loop2": root / "loop1",
        "chain1": root / "chain2",
        "chain2": outside / "secret.txt",
        "parent_link": Path(".."),
        "ok_link.txt": root / "secret.pem",
        "link_in": root / "sub",
    }
    for name, target in links.items():
        (root / name).symlink_to(target)
    monkeypatch.setenv("HOME", str(outside))
    monkeypatch.chdir(tmp_path)
    return root


DENIED: list[tuple[str, Any]] = [
    ("parent traversal", "../outside/secret.txt"),
    ("nested traversal", "sub/../../outside/secret.txt"),
    ("dot traversal", "./../outside"),
    ("dot-dot after dot", "sub/./../../outside"),
    ("traversal through a file", "a.txt/../../outside/secret.txt"),
    ("absolute join", "/etc/passwd"),
    ("absolute outside", "{tmp}/outside/secret.txt"),
    ("absolute with dot-dot", "{root}/../outside/secret.txt"),
    ("double slash", "//etc/passwd"),
    ("slash dot", "/./etc/passwd"),
    ("prefix sibling", "{tmp}/allowed_evil/x.txt"),
    ("prefix sibling relative", "../allowed_evil/x.txt"),
    ("dir symlink out", "link_out/secret.txt"),
    ("file symlink out", "link_file"),
    ("dangling symlink out (write escape)", "dangling"),
    ("relative symlink up", "rel_up/secret.txt"),
    ("absolute symlink", "abs_etc/passwd"),
    ("symlink chain", "chain1"),
    ("symlink to parent", "parent_link/outside/secret.txt"),
    ("dot-dot after a symlink", "link_out/../outside/secret.txt"),
    ("dot-dot after a symlink lands outside", "link_out/../allowed_evil/x.txt"),
    ("proc self root", "/proc/self/root/etc/passwd"),
    ("proc self root back inside", "/proc/self/root{root}/a.txt"),
    ("proc self cwd", "/proc/self/cwd/allowed/a.txt"),
    ("double-slash proc back inside", "//proc/self/root{root}/a.txt"),
    ("proc self fd", "/proc/self/fd/0"),
    ("dev fd", "/dev/fd/0"),
    ("dev stdin", "/dev/stdin"),
    ("sys", "/sys/kernel"),
    ("denied glob", "secret.pem"),
    ("denied glob after traversal", "sub/../secret.pem"),
    ("denied glob via symlink name", "ok_link.txt"),
    ("denied directory glob", ".git/config"),
    ("NUL byte", "a.txt\x00/../../etc/passwd"),
    ("empty", ""),
    ("home expansion", "~/secret.txt"),
    ("bare home", "~"),
    ("bytes traversal", b"../outside/secret.txt"),
    ("pathlib outside", Path("/etc/passwd")),
    ("one bad item in a list", ["a.txt", "/etc/passwd"]),
    ("not a path", 3),
    ("dict", {"path": "a.txt"}),
]

MUST_EXIST_DENIED = [
    ("symlink loop", "loop1"),
    ("missing", "nope.txt"),
    ("case differs on a case-sensitive filesystem", "A.TXT"),
]


def _tool(agent: guardkit.LocalAgent, root: Path, calls: Any, **rule: Any) -> Any:
    rule = {"allow": [str(root)], "deny": ["*.pem", "*/.git/*"], "base": str(root), **rule}

    @guardkit.tool(guard=agent, paths={"path": PathRule(**rule)})
    def read(path: Any) -> str:
        calls(path)
        return "read"

    return read


def _fill(value: Any, root: Path) -> Any:
    if isinstance(value, str):
        return value.format(root=root, tmp=root.parent)
    return value


@pytest.mark.parametrize(("case", "value"), DENIED, ids=[c for c, _ in DENIED])
def test_denied(tree, agent, ledger, calls, case, value):
    read = _tool(agent, tree, calls)
    with pytest.raises(ToolDenied) as info:
        read(_fill(value, tree))
    assert calls.count == 0, case
    assert info.value.reason["code"] == "path_denied"
    assert info.value.reason["argument"] == "path"
    assert "path_denied" in info.value.message
    assert ledger(agent, "action_denied")[-1]["reason"]["code"] == "path_denied"
    assert ledger(agent, "scar")[-1]["severity"] == "moderate"


@pytest.mark.parametrize(
    ("case", "value"), MUST_EXIST_DENIED, ids=[c for c, _ in MUST_EXIST_DENIED]
)
def test_denied_when_it_must_exist(tree, agent, calls, case, value):
    read = _tool(agent, tree, calls, must_exist=True)
    with pytest.raises(ToolDenied):
        read(value)
    assert calls.count == 0, case


ALLOWED = [
    ("plain", "a.txt", "a.txt"),
    ("nested", "sub/b.txt", "sub/b.txt"),
    ("harmless dot-dot", "sub/../a.txt", "a.txt"),
    ("absolute inside", "{root}/a.txt", "a.txt"),
    ("new file", "new.txt", "new.txt"),
    ("percent-encoding is literal to the OS", "%2e%2e/x", "%2e%2e/x"),
    ("backslashes are literal on POSIX", "..\\outside", "..\\outside"),
    ("full-width dots are a name", "\uff0e\uff0e/outside", "\uff0e\uff0e/outside"),
    ("symlink that stays inside", "link_in/b.txt", "sub/b.txt"),
]


@pytest.mark.parametrize(("case", "value", "resolved"), ALLOWED, ids=[c for c, *_ in ALLOWED])
def test_allowed_records_the_resolved_path(tree, agent, ledger, calls, case, value, resolved):
    read = _tool(agent, tree, calls)
    assert read(_fill(value, tree)) == "read"
    assert calls.count == 1
    recorded = ledger(agent, "action_requested")[-1]["input"]
    assert recorded["_guardkit"]["paths"]["path"] == os.path.join(os.path.realpath(tree), resolved)


def test_relative_paths_default_to_the_working_directory(tree, agent, calls):
    read = _tool(agent, tree, calls, base=None)
    os.chdir(tree)
    assert read("a.txt") == "read"
    os.chdir(tree.parent)
    with pytest.raises(ToolDenied):
        read("a.txt")


def test_rules_from_the_policy_section(tree, make_agent, calls):
    agent = make_agent(
        tools={
            "read": {
                "cost": 0,
                "paths": {"path": {"allow": [str(tree)], "deny": ["*.pem"], "base": str(tree)}},
            }
        }
    )

    @guardkit.tool(guard=agent)
    def read(path: str) -> str:
        calls(path)
        return "ok"

    assert read("a.txt") == "ok"
    for bad in ("../outside/secret.txt", "secret.pem"):
        with pytest.raises(ToolDenied):
            read(bad)
    assert calls.count == 1


def test_decorator_and_policy_rules_both_apply(tree, make_agent, calls):
    agent = make_agent(
        tools={
            "read": {
                "cost": 0,
                "paths": {"path": {"allow": [str(tree / "sub")], "base": str(tree)}},
            }
        }
    )
    read = _tool(agent, tree, calls)
    assert read("sub/b.txt") == "read"
    with pytest.raises(ToolDenied):
        read("a.txt")  # allowed by the decorator, not by the policy


@pytest.mark.parametrize(
    "section",
    [
        {"path": {"allow": "/tmp"}},
        {"path": {"allow": ["/tmp"], "bogus": 1}},
        {"path": {"allow": ["/tmp"], "write": "yes"}},
        {"path": "/tmp"},
    ],
)
def test_malformed_policy_sections_raise_policy_error(make_agent, section):
    agent = make_agent(tools={"read": {"cost": 0, "paths": section}})

    @guardkit.tool(guard=agent)
    def read(path: str) -> str:
        return path

    with pytest.raises(PolicyError):
        read("x")


def test_rule_validation():
    with pytest.raises(ValueError, match="root"):
        PathRule(allow=[])
    with pytest.raises(TypeError):
        PathRule(allow="/tmp")  # type: ignore[arg-type]


def test_corpus_is_large_enough():
    assert len(DENIED) + len(MUST_EXIST_DENIED) >= 40


def test_case_folding_is_probed_per_root(tmp_path, monkeypatch):
    from guardkit.checks import paths

    root = tmp_path / "Data"
    root.mkdir()
    paths.folds_at.cache_clear()
    assert not paths.folds_at(str(root))  # this filesystem is case-sensitive
    assert not paths.is_under(str(tmp_path / "DATA" / "x"), str(root))
    paths.folds_at.cache_clear()
    monkeypatch.setattr(paths.os.path, "samefile", lambda a, b: True)  # a folding mount
    assert paths.folds_at(str(root))
    assert paths.is_under(str(tmp_path / "DATA" / "x"), str(root))
    paths.folds_at.cache_clear()
