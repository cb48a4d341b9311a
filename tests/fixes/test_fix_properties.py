"""Property: on generated agent-style modules, `fix` yields code that compiles, is stable under a
second run, and leaves no fixable finding of the rules it fixes. (hypothesmith is not installed
here, so the programs come from a small grammar of agent code instead of arbitrary Python.)"""

from __future__ import annotations

from guardkit.codemods.fixer import fix_source
from guardkit.codemods.rules import RULES
from guardkit.codemods.scanner import scan_source
from hypothesis import given, settings
from hypothesis import strategies as st

FIXED = {rule.ID for rule in RULES if rule.FIXED_BY}
HEADER = [
    "import anthropic",
    "import litellm",
    "from openai import OpenAI",
    "from langchain_core.tools import tool",
    "from mcp.server.fastmcp import FastMCP",
    "",
    "client = anthropic.Anthropic()",
    "oai = OpenAI()",
    "mcp = FastMCP('x')",
    "",
]
CALLS = [
    "client.messages.create(model='m', messages=[])",
    "oai.chat.completions.create(model='m', messages=[])",
    "litellm.completion(model='m', messages=[])",
]
LOOPS = ["while True:", "while not done:", "for _ in range(3):", "while n < 3:"]


@st.composite
def blocks(draw: st.DrawFn, depth: int, indent: int) -> list[str]:
    pad = "    " * indent
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        call = draw(st.sampled_from(CALLS))
        form = draw(
            st.sampled_from(
                ["assign", "expr", "if", "loop", "with"] if depth else ["assign", "expr"]
            )
        )
        if form == "assign":
            lines.append(f"{pad}reply = {call}  # keep")
        elif form == "expr":
            lines.append(f"{pad}{call}")
        elif form == "if":
            lines += [f"{pad}if reply:", *draw(blocks(depth - 1, indent + 1))]
        elif form == "with":
            lines += [f"{pad}with open('f') as fh:", *draw(blocks(depth - 1, indent + 1))]
        else:
            loop = draw(st.sampled_from(LOOPS))
            body = draw(blocks(depth - 1, indent + 1))
            step = [f"{pad}    n += 1"] if loop.startswith("while n") else []
            lines += [f"{pad}{loop}", *step, *body]
    return lines


@st.composite
def programs(draw: st.DrawFn) -> str:
    lines = list(HEADER)
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["function", "async", "tool", "mcp", "table"]))
        if kind in ("function", "async"):
            prefix = "async def" if kind == "async" else "def"
            lines += [f"{prefix} agent{i}(done=False, n=0, reply=None):", *draw(blocks(2, 1)), ""]
        elif kind == "tool":
            lines += ["@tool", f"def tool{i}(q: str) -> str:", "    return q", ""]
        elif kind == "mcp":
            lines += ["@mcp.tool()", f"async def mcp{i}(q: str) -> str:", "    return q", ""]
        else:
            lines += [f"def fn{i}(q):", "    return q", f"TOOLS{i} = {{'fn': fn{i}}}", ""]
    return "\n".join(lines) + "\n"


@settings(max_examples=15)
@given(programs())
def test_fix_compiles_is_stable_and_clears_the_fixed_rules(code: str) -> None:
    assert [f for f in scan_source(code, "gen.py").findings if f.fixable]  # there is work to do
    first = fix_source(code, "gen.py")
    assert first.error is None
    assert first.changed
    compile(first.after, "gen.py", "exec")
    second = fix_source(first.after, "gen.py")
    assert not second.changed, second.after
    left = [f for f in scan_source(first.after, "gen.py").findings if f.rule in FIXED and f.fixable]
    assert left == []
