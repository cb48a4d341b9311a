"""The codemods also run under libcst's own CLI (``python -m libcst.tool codemod``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_libcst_tool_codemod_command(tmp_path: Path) -> None:
    target = tmp_path / "tools.py"
    target.write_text(
        "from agents import function_tool\n\n@function_tool\ndef f(x):\n    return x\n"
    )
    cmd = [
        sys.executable,
        "-m",
        "libcst.tool",
        "codemod",
        "--no-format",
        "-x",
        "guardkit.codemods.transforms.add_tool_guard.AddToolGuard",
        str(target),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert target.read_text() == (
        "from agents import function_tool\nimport guardkit\n\n"
        "@function_tool\n@guardkit.tool()\ndef f(x):\n    return x\n"
    )
