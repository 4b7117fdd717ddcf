"""``python -m kenning`` runs the command line."""

from .cli import main

main()
