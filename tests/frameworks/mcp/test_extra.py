"""Without the ``mcp`` package, importing the integration names the extra to install."""

from __future__ import annotations

import subprocess
import sys


def test_importing_without_the_sdk_names_the_extra():
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "try:\n"
        "    import guardkit.plugins.mcp\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'guardkit[mcp]'" in done.stdout


def test_the_cli_says_which_extra_when_the_sdk_is_missing():
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "from guardkit.cli import main\n"
        "main(['mcp', '--help'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "guardkit[mcp]" in done.stderr
