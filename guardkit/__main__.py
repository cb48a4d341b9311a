"""``python -m guardkit``: the command line."""

from guardkit.cli import main

main()
