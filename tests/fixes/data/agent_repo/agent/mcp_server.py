"""A FastMCP server exposing file tools."""

from pathlib import Path

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("files")
ROOT = Path("/srv/data")


@mcp.tool()
def list_files(folder: str = ".") -> list[str]:
    """List files in a folder."""
    return sorted(p.name for p in (ROOT / folder).iterdir())


@mcp.tool(description="Delete a file")
async def delete_file(name: str) -> str:
    (ROOT / name).unlink()
    return "deleted"


def _helper() -> None:
    """Not a tool."""


if __name__ == "__main__":
    mcp.run()
