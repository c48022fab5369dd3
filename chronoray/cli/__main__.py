"""``python -m chronoray.cli``: the ``chronoray`` command."""

from chronoray.cli import main

main()
