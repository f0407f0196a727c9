"""What every tool does before its work: parse its command line, stay offline, seed."""

from __future__ import annotations

import argparse
import os
from typing import Any, Callable


def prepare() -> None:
    """Offline by default (the models are bundled), and every random generator seeded."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from ..config import seed_everything

    seed_everything()


def run_script(doc: str, prog: str, add_arguments: Callable[[argparse.ArgumentParser], None],
               run_args: Callable[[argparse.Namespace], Any],
               argv: list[str] | None = None) -> int:
    """A one-command tool: its parser (`add_arguments`), `prepare`, then `run_args`; exit 0."""
    p = argparse.ArgumentParser(prog=prog, description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    args = p.parse_args(argv)
    prepare()
    run_args(args)
    return 0
