"""Modules written for a newer Python than the one guardkit runs on: PEP 701 f-strings (3.12)
reuse their own quotes, span lines and hold comments in a field. Python 3.11's ``ast`` rejects
the whole module for one of them, and the scan lost every tool in it; ``parsing`` blanks those
f-strings in place, keeping every other node where it was."""

from __future__ import annotations

import ast
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from guardkit.codemods.parsing import blank_newer_fstrings, parse_module
from guardkit.codemods.scanner import scan_source

older = pytest.mark.skipif(sys.version_info >= (3, 12), reason="this Python reads PEP 701 itself")

NEWER = [
    'greeting = f"hello {user["name"]}"; after = 1\n',
    'report = f"exit {\n    proc.returncode}: {proc.stdout}"; after = 1\n',
    'listing = f"{", ".join(\n    names  # one per tool\n)}"; after = 1\n',
    "path = f'{'\\\\'.join(parts)}'; after = 1\n",
    'cell = f"{value:{width}.{digits}f} {row["id"]!r:>10}"; after = 1\n',
    'nested = f"{f"{f"{deep["x"]}"}"}"; after = 1\n',
    'text = f"""{\n    d["k"]  # the key\n}"""; after = 1\n',
    'mixed = rf"{x["a"]}\\d" + Rb"raw"; after = 1\n',
    'report = f"""{"\\n".join(rows)}\n\n"""; after = 1\n',
]


@older
@pytest.mark.parametrize("line", NEWER)
def test_a_newer_fstring_is_blanked_in_place(line: str) -> None:
    source = f"import os\n{line}def tool(x):\n    return os.getcwd()\n"
    with pytest.raises(SyntaxError):
        ast.parse(source)
    module = parse_module(source)
    assign, after = module.body[1], module.body[2]
    assert isinstance(assign, ast.Assign)
    assert isinstance(assign.value, (ast.Constant, ast.BinOp))
    # every node after the blanked string stands where it stood: same line, same column
    last = source.splitlines()[after.lineno - 1]
    assert isinstance(after, ast.Assign)
    assert last.index("after = 1") == after.col_offset
    assert source.splitlines().index("def tool(x):") + 1 == module.body[3].lineno


@older
def test_byte_columns_are_kept_after_non_ascii_text() -> None:
    source = 'label = f"café {row["name"]} ✓"; after = 1\n'
    after = parse_module(source).body[1]
    assert after.col_offset == source.encode().index(b"after = 1")


@older
def test_a_module_the_blanking_cannot_mend_keeps_its_error() -> None:
    with pytest.raises(SyntaxError):
        parse_module('x = f"{\n\n  y}"\n')  # an empty line holds no continuation
    with pytest.raises(SyntaxError):
        parse_module('x = f"{y["k"]}"\ndef broken(:\n    pass\n')


def test_mcp_tools_of_a_module_with_newer_fstrings_are_found() -> None:
    source = textwrap.dedent(
        '''\
        import subprocess
        from mcp.server.fastmcp import FastMCP

        mcp = FastMCP("runner")


        @mcp.tool()
        def run_command(command: str) -> str:
            """Run a shell command."""
            proc = subprocess.run(command, shell=True, capture_output=True, text=True)
            return f"exit {
                proc.returncode}: {proc.stdout} {proc.__dict__["args"]}"
        '''
    )
    result = scan_source(source, "server.py")
    assert result.error is None
    assert [(f.rule, f.symbol, f.line) for f in result.findings] == [("GK201", "run_command", 8)]


def _standard_library() -> list[Path]:
    return sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))


def test_modules_this_python_reads_are_left_alone() -> None:
    """Every top-level module of the standard library (thousands of strings, f-strings,
    escapes, raw and nested quotes) parses as it is: nothing is blanked, nothing misread."""
    modules = _standard_library()
    assert len(modules) > 100
    for path in modules:
        source = path.read_text(encoding="utf-8", errors="surrogateescape")
        try:
            ast.parse(source)
        except SyntaxError:
            continue
        assert blank_newer_fstrings(source) is None, path
