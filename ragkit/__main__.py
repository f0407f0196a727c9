"""`python -m ragkit ...` is the `ragkit` command (see `ragkit.tools.cli`).

This file is the command's door, not library code: it is the one module outside `ragkit.tools`
that imports the tools (tests/test_layers.py names it as the exception).
"""

import sys

from .tools.cli import main

sys.exit(main())
