"""``python -m ragkit.tools.robustness``: the same as ``ragkit robustness``."""

import sys

from . import main

if __name__ == "__main__":  # importing this module (the layer tests import every one) runs nothing
    sys.exit(main())
