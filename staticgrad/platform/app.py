"""`sg.app.run`: TF1's `tf.app.run`, which parses the command-line flags (flags.py) and calls
the program's `main` with the arguments no flag took, exiting with what it returns.

    def main(argv):
        ...
    if __name__ == "__main__":
        sg.app.run()                     # main of the __main__ module
"""

from __future__ import annotations

import sys

from .._namespace import missing_name, public_dir
from . import flags

__all__ = ["run", "flags"]


def run(main=None, argv=None):
    """Parse the flags from `argv` (default sys.argv), then `sys.exit(main(remaining))`."""
    remaining = flags.FLAGS(sys.argv if argv is None else argv, known_only=True)
    if main is None:
        main = getattr(sys.modules["__main__"], "main", None)
        if main is None:
            raise ValueError("sg.app.run() was given no main, and the __main__ module has no "
                             "function main")
    sys.exit(main(remaining))

__dir__ = public_dir(globals())
__getattr__ = missing_name("staticgrad.app", "tf.app", globals())
