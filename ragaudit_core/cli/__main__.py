"""``python -m ragaudit_core.cli``: the same command line as the ``ragaudit`` script."""

from ragaudit_core.cli import main

main()
