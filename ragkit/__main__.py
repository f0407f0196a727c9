"""`python -m ragkit ...` is the `ragkit` command (see `ragkit.cli`)."""

import sys

from .cli import main

sys.exit(main())
