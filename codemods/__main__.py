"""``python -m guardkit.codemods scan|fix ...`` (the same commands ``guardkit`` registers)."""

from __future__ import annotations

import click

from .cli import fix, scan


@click.group()
def main() -> None:
    """guardkit static passes and codemods."""


main.add_command(scan)
main.add_command(fix)

if __name__ == "__main__":
    main()
