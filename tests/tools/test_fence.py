"""The runtime fence against every path, socket and process form, in a child process.

Each ``BLOCKED`` scenario was a hole (issue 14): the operation succeeded outside the tool's write
roots or egress rules. ``LIMITS`` are what the fence still cannot see, as docs/tools.md lists
them: each test proves the limit is real, so the list goes stale loudly if CPython starts
auditing one of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.tools.conftest import run_scenarios


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_scenarios("fence_scenarios.py", tmp_path_factory.mktemp("fence"))


BLOCKED = {
    "os_open_dir_fd": "may not write",
    "rename_dst_dir_fd": "may not rename",
    "remove_dir_fd": "may not remove",
    "truncate": "may not truncate",
    "ftruncate_descriptor": "may not truncate",
    "rename_out": "may not rename",
    "replace_in": "may not rename",
    "remove": "may not remove",
    "unlink": "may not remove",
    "rmdir": "may not rmdir",
    "mkdir": "may not mkdir",
    "rmtree": "may not rmtree",
    "chmod": "may not chmod",
    "chown": "may not chown",
    "utime": "may not utime",
    "symlink": "may not symlink",
    "link_to_outside_name": "may not link",
    "write_through_own_hard_link": "may not link",
    "write_through_existing_hard_link": "hard links",
    "copyfile_over": "may not copyfile",
    "move_out": "may not move",
    "udp_sendmsg": "may not connect to 127.0.0.1",
    "udp_sendto": "may not connect to 127.0.0.1",
    "lookup_unlisted_name": "may not look up 'secret-data.exfil.invalid'",
    "gethostbyname_unlisted_name": "may not look up 'secret-data.exfil.invalid'",
    "multiprocessing_spawn": "may not start processes (guardkit.fork_exec)",
    "multiprocessing_forkserver": "blocked by guardkit",
    "os_kill": "may not signal processes (os.kill)",
}


@pytest.mark.parametrize(("name", "why"), sorted(BLOCKED.items()))
def test_blocked_and_nothing_happened(outcomes, name, why):
    result = outcomes[name]
    assert result["outcome"]["status"] == "failure", result
    assert "blocked by guardkit" in result["outcome"]["detail"]
    assert why in result["outcome"]["detail"]
    assert result["effect"] is True, f"{name}: the operation took effect"


@pytest.mark.parametrize(
    "name",
    [
        "os_open_dir_fd_inside",
        "honest_file_work_inside",
        "lookup_listed_name",
        "multiprocessing_spawn_allowed",
    ],
)
def test_honest_work_still_runs(outcomes, name):
    result = outcomes[name]
    assert result["error"] is None, result
    assert result["outcome"]["status"] == "success"
    assert result["effect"] is True


LIMITS = [
    "limit_ctypes",
    "limit_threads",
    "limit_descriptor_opened_before",
    "limit_mkfifo",
    "limit_socket_connected_before",
    "limit_proxy",
    "limit_child_process",
    "limit_captured_fork_exec",
]


@pytest.mark.parametrize("name", LIMITS)
def test_what_the_fence_cannot_see(outcomes, name):
    result = outcomes[name]
    assert result["error"] is None, result
    assert result["outcome"]["status"] == "success"
    assert result["effect"] is True


def test_every_limit_is_documented():
    text = (Path(__file__).parents[2] / "docs" / "tools.md").read_text(encoding="utf-8")
    section = text.split("### What the fence cannot see", 1)[1].split("\n## ", 1)[0]
    for name in LIMITS:
        assert f"`{name}`" in section, name
