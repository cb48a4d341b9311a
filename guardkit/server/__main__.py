"""``python -m guardkit.server``: the same as ``guardkit serve``."""

from guardkit.server.cli import serve

serve(prog_name="python -m guardkit.server")
