"""``guardkit mcp proxy``'s usage errors: nothing starts, the message says what to do."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from guardkit.cli import main


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--agent", "a"], "either as -- COMMAND"),
        (["--agent", "a", "--upstream", "http://127.0.0.1:1/mcp", "--", "server"], "either as"),
        (
            ["--agent", "a", "--guard", "http://127.0.0.1:1", "--", "server"],
            "--guard needs --token",
        ),
        (["--agent", "a", "--serve", "http", "--bind", "nowhere", "--", "server"], "HOST:PORT"),
        (["--", "server"], "--agent"),
    ],
)
def test_usage_errors_exit_2_and_say_what_to_do(args, says, monkeypatch):
    for name in ("GUARDKIT_AGENT", "GUARDKIT_URL", "GUARDKIT_TOKEN", "GUARDKIT_POLICY"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(main, ["mcp", "proxy", *args])
    assert result.exit_code == 2
    assert says in result.output


def test_the_proxy_is_listed_under_guardkit_mcp():
    result = CliRunner().invoke(main, ["mcp", "--help"])
    assert result.exit_code == 0
    assert "proxy" in result.output
