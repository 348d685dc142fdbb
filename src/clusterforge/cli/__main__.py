"""`python -m clusterforge.cli ...` (the console script's entry point, for tests and scripts)."""

from clusterforge.cli import main

main()
