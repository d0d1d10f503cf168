"""The klineage command line: every typer and rich module of klineage lives here.

Each command parses its options, calls one library function and renders the result (rich, or
``--json``). ``main`` is the console entry point.
"""

from klineage.cli.main import app, main

__all__ = ["app", "main"]
