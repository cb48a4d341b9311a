"""Lineage's client setup helpers (LINEAGE.md §13): ``connect_admin``, ``find_admin_token``,
``load_dotenv`` and ``SetupError``, against a real server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import guardkit
from guardkit import SetupError
from guardkit.connect import DEFAULT_URL, connect_admin, find_admin_token, load_dotenv
from tests.server.conftest import ADMIN


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No guard variables set, and a repository of our own as the working directory."""
    for name in ("GUARD_URL", "GUARD_ADMIN_TOKEN", "GUARD_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "scripts").mkdir()
    monkeypatch.chdir(repo / "scripts")
    return repo


def _write_token(directory: Path, token: str) -> None:
    (directory / "keys").mkdir(parents=True)
    (directory / "keys" / "admin.token").write_text(token + "\n")


def test_the_names_lineage_exports_are_there():
    assert guardkit.connect_admin is connect_admin
    assert guardkit.find_admin_token is find_admin_token
    assert guardkit.load_dotenv is load_dotenv
    assert issubclass(SetupError, guardkit.GuardError)
    assert DEFAULT_URL == "http://127.0.0.1:9200"


def test_token_search_order(clean, monkeypatch, tmp_path):
    with pytest.raises(SetupError) as info:
        find_admin_token()
    message = str(info.value)
    assert "GUARD_ADMIN_TOKEN" in message
    assert str(clean / "guard-data" / "keys" / "admin.token") in message
    assert "guardkit serve" in message

    _write_token(clean / "scripts" / "guard-data", "from-cwd")
    assert find_admin_token() == "from-cwd"
    _write_token(clean / "guard-data", "from-repo")
    assert find_admin_token() == "from-repo"
    _write_token(tmp_path / "data", "from-data-dir")
    monkeypatch.setenv("GUARD_DATA_DIR", str(tmp_path / "data"))
    assert find_admin_token() == "from-data-dir"
    (clean / ".env").write_text("# secrets\nexport GUARD_ADMIN_TOKEN='from-dotenv'\n")
    assert find_admin_token() == "from-dotenv"
    monkeypatch.setenv("GUARD_ADMIN_TOKEN", "from-env")
    assert find_admin_token() == "from-env"


def test_load_dotenv_never_overrides(clean, monkeypatch):
    (clean / ".env").write_text('GUARD_URL="http://example.invalid:1"\nA_NEW_ONE=1\n\nnoise\n')
    monkeypatch.setenv("GUARD_URL", "http://set.before:2")
    monkeypatch.delenv("A_NEW_ONE", raising=False)
    values = load_dotenv()
    assert values == {"GUARD_URL": "http://example.invalid:1", "A_NEW_ONE": "1"}
    assert os.environ["GUARD_URL"] == "http://set.before:2"
    assert os.environ["A_NEW_ONE"] == "1"
    monkeypatch.delenv("A_NEW_ONE")
    assert load_dotenv(clean / "missing.env") == {}


def test_connect_admin(server, clean, monkeypatch):
    with connect_admin(server.url, ADMIN) as admin:
        assert isinstance(admin.agents(), list)
    monkeypatch.setenv("GUARD_URL", server.url)
    _write_token(clean / "guard-data", ADMIN)
    with connect_admin() as admin:
        assert admin.url == server.url


def test_connect_admin_with_the_wrong_token(server, clean):
    with pytest.raises(SetupError) as info:
        connect_admin(server.url, "not-the-admin-token-" + "x" * 20)
    assert "rejected the admin token" in str(info.value)
    assert info.value.message.startswith("the guard at ")


def test_connect_admin_without_a_server(clean):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: the connection is refused
        with pytest.raises(SetupError) as info:
            connect_admin(f"http://127.0.0.1:{port}", ADMIN)
    assert "no guard server answers" in str(info.value)
    assert "guardkit serve" in str(info.value)


def test_a_lineage_setup_script_runs_with_only_its_import_changed(server, tmp_path):
    script = tmp_path / "setup_agents.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            from guardkit import SetupError, connect_admin

            try:
                admin = connect_admin()
            except SetupError as exc:
                sys.exit(f"setup: {exc}")
            admin.create_agent("lineage-script", {"budget": 5, "scar_limit": 10, "tools": {}})
            print(sorted(a["agent_id"] for a in admin.agents()))
            """
        )
    )
    env = {"GUARD_URL": server.url, "GUARD_ADMIN_TOKEN": ADMIN, "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "lineage-script" in done.stdout
    refused = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**env, "GUARD_ADMIN_TOKEN": "wrong-" + "w" * 40},
        timeout=60,
    )
    assert refused.returncode == 1
    assert "setup: the guard at" in refused.stderr
