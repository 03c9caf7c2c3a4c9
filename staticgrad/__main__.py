"""`python -m staticgrad ...`: the `staticgrad` command (staticgrad/cli.py)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
