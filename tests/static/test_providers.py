"""Model calls behind provider classes (issue 20): a folder without ``__init__.py`` that the
project imports as a package (``from deskbot.config import planner``) is a namespace package,
so its modules are ``deskbot.config``, not loose scripts named ``config``; a client made by a
factory method that each subclass overrides (``self.client = self.create_client()``, one
returning ``OpenAI(...).chat.completions``) is a library client; and an instance of a subclass
that only sets class attributes still has its base's ``call``, so a loop over
``planner.call(...)`` in another module is a model loop. The loose scripts of ``notes/``
(``from config import LIMIT``) keep their own names."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from guardkit.codemods.cache import ScanCache
from guardkit.codemods.config import Config
from guardkit.codemods.modules import namespace_names
from guardkit.codemods.runner import discover, scan_paths

Found = Callable[[], set[tuple[str, int, str, str]]]
EXPECTED = {
    ("deskbot/agent.py", 6, "GK101", "planner.call"),
    ("deskbot/llm.py", 15, "GK102", "self.client.create"),
    ("notes/summarise.py", 13, "GK102", "client.chat.completions.create"),
}


@pytest.fixture
def providers(data_project: Callable[[str], Path]) -> Path:
    return data_project("providers")


def test_a_loop_over_a_provider_subclass_from_a_namespace_package(
    providers: Path, found: Found
) -> None:
    assert found() == EXPECTED


def test_a_client_from_the_base_class_alone_is_no_library_client(
    providers: Path, found: Found
) -> None:
    # without the subclass whose factory returns the library's instance, ``self.client`` is
    # whatever an unseen subclass makes: no model call, no model loop
    llm = providers / "deskbot" / "llm.py"
    text = llm.read_text()
    llm.write_text(text[: text.index("class LocalProvider")])
    config = providers / "deskbot" / "config.py"
    config.write_text("from deskbot.llm import Provider\n\nplanner = Provider()\n")
    seen = {(p, r) for p, _, r, _ in found()}
    assert ("deskbot/llm.py", "GK102") not in seen
    assert ("deskbot/agent.py", "GK101") not in seen


def _names(tmp_path: Path, files: dict[str, str]) -> dict[str, str]:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    plain = {str(tmp_path / rel): Path(rel).stem for rel in files}
    plain |= {str(tmp_path / r): Path(r).parent.name for r in files if r.endswith("__init__.py")}
    named = namespace_names(plain, lambda path: Path(path).read_bytes())
    return {str(Path(p).relative_to(tmp_path)): n for p, n in named.items()}


def test_a_plain_folder_imported_as_a_package_is_one(tmp_path: Path) -> None:
    names = _names(
        tmp_path,
        {"app/config.py": "X = 1\n", "app/main.py": "from app.config import X\n"},
    )
    assert names == {"app/config.py": "app.config", "app/main.py": "app.main"}


def test_a_folder_of_scripts_keeps_its_names(tmp_path: Path) -> None:
    names = _names(
        tmp_path,
        {"app/config.py": "X = 1\n", "app/main.py": "from config import X\nimport app_x\n"},
    )
    assert names == {"app/config.py": "config", "app/main.py": "main"}


def test_a_module_of_the_folders_name_keeps_the_import(tmp_path: Path) -> None:
    # ``from agent import run`` means agent.py, not the folder agent/ beside it
    names = _names(
        tmp_path,
        {
            "agent.py": "def run(): ...\n",
            "agent/helper.py": "from agent import run\n",
        },
    )
    assert names == {"agent.py": "agent", "agent/helper.py": "helper"}


def test_a_regular_package_is_left_alone(tmp_path: Path) -> None:
    names = _names(
        tmp_path,
        {"pkg/__init__.py": "", "pkg/tools.py": "from pkg import x\n"},
    )
    assert names["pkg/__init__.py"] == "pkg"


def test_the_cache_forgets_a_module_analysed_under_its_old_name(providers: Path) -> None:
    # first scanned while nothing imports deskbot.* (its files are loose scripts), then the
    # config module appears: the cached records of llm.py and agent.py are stale names
    config = providers / "deskbot" / "config.py"
    agent = providers / "deskbot" / "agent.py"
    config_text, agent_text = config.read_text(), agent.read_text()
    config.unlink()
    # (and the loop calls a method no project class has: ``planner.call`` on an unknown value
    # would be resolved by its name, ``Provider.call``)
    agent.write_text(
        agent_text.replace("from deskbot.config import planner", "planner = None").replace(
            "planner.call(", "planner.ask("
        )
    )
    files = discover([str(providers)])
    cache = ScanCache(providers / ".cache", "x")
    first = scan_paths(files, Config(), jobs=1, cache=cache)
    assert not any(f.rule == "GK101" for r in first for f in r.findings)
    config.write_text(config_text)
    agent.write_text(agent_text)
    files = discover([str(providers)])
    second = scan_paths(files, Config(), jobs=1, cache=ScanCache(providers / ".cache", "x"))
    loops = [(Path(r.path).name, f.line) for r in second for f in r.findings if f.rule == "GK101"]
    assert loops == [("agent.py", 6)]
