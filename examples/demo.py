"""staticgrad in one screen: declare a graph, run it with feeds, read the generated code.

    python examples/demo.py          # the same as `staticgrad demo`

The demo itself lives in staticgrad/demo.py, so that the installed `staticgrad demo`
command runs it too.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
from staticgrad.demo import main  # noqa: E402

if __name__ == "__main__":
    main()
