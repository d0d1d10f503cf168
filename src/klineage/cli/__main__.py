"""``python -m klineage.cli``: the same as the ``klineage`` command."""

from klineage.cli.main import main

main()
