"""``python -m ragkit.tools.robustness``: the same as ``ragkit robustness``."""

import sys

from . import main

sys.exit(main())
