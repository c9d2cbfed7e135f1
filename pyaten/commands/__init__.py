"""Sub-commands of the `pyaten` command line (see `pyaten/cli.py`)."""
