"""``witness="cmd:PROGRAM ARGS"``: every commit's heads on a program's stdin, before the caller
is answered; a program that fails fails the decision (on SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from guardkit import Guard, StoreError
from guardkit.store import open_store

POLICY = {"budget": 100, "scar_limit": 10, "tools": {"buy": {"cost": 1}}}


def publisher(tmp_path: Path) -> tuple[str, Path, Path]:
    """A command appending its stdin to ``heads.log``, failing while ``down`` exists."""
    log, down = tmp_path / "heads.log", tmp_path / "down"
    script = (
        f"if [ -e {shlex.quote(str(down))} ]; then echo 'publisher unreachable' >&2; exit 7; fi; "
        f"cat >> {shlex.quote(str(log))}"
    )
    return f"cmd:sh -c {shlex.quote(script)}", log, down


def _last(log: Path) -> list[object]:
    line: list[object] = json.loads(log.read_text().splitlines()[-1])
    return line


def test_every_commit_is_published_before_the_answer(store_url: str, tmp_path: Path) -> None:
    command, log, _ = publisher(tmp_path)
    with Guard(open_store(store_url, witness=command)) as guard:
        guard.create_agent("bot", POLICY)
        for _ in range(3):
            guard.agent("bot").request("buy", {})
            head = guard.status("bot")["head"]
            assert _last(log) == ["bot", head["seq"], head["hash"], None]


def test_a_failing_command_fails_the_decision(store_url: str, tmp_path: Path) -> None:
    command, log, down = publisher(tmp_path)
    with Guard(open_store(store_url, witness=command)) as guard:
        guard.create_agent("bot", POLICY)
        bot = guard.agent("bot")
        bot.request("buy", {})
        down.touch()
        with pytest.raises(StoreError, match="exited with status 7: publisher unreachable"):
            bot.request("buy", {})
        down.unlink()
        bot.request("buy", {})  # publishes the head past the unanswered one too
        head = guard.status("bot")["head"]
        assert _last(log) == ["bot", head["seq"], head["hash"], None]
        assert guard.status("bot")["spent"] == 3  # the unanswered decision was committed


def test_a_command_naming_no_program_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="names no program"):
        Guard(tmp_path / "g.db", witness="cmd:  ")
