"""``python -m smoke_core.cli``: the ``smoke`` command."""

from . import main

main()
