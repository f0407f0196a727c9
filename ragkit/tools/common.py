"""What every tool does before its work: parse its command line, stay offline, seed."""

from __future__ import annotations

import argparse
import os
from typing import Any, Callable


def prepare() -> None:
    """Offline by default (the models are bundled), the ``RAGKIT_*`` variables checked, and
    every random generator seeded. A bad variable ends the tool here with one line naming it
    and exit code 2 (as ``ragkit NAME`` does before it starts the tool), also when the tool is
    run as ``python -m ragkit.tools.NAME``."""
    import sys

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from ..config import seed_everything
    from .cli import EXIT_USAGE, environment_error

    problem = environment_error()
    if problem:
        print(f"ragkit: {problem}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
    seed_everything()


def run_script(doc: str, prog: str, add_arguments: Callable[[argparse.ArgumentParser], None],
               run_args: Callable[[argparse.Namespace], Any],
               argv: list[str] | None = None) -> int:
    """A one-command tool: its parser (`add_arguments`), `prepare`, then `run_args`; exit 0,
    or the status `run_args` returns when it returns an int."""
    p = argparse.ArgumentParser(prog=prog, description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    args = p.parse_args(argv)
    prepare()
    code = run_args(args)
    return code if isinstance(code, int) else 0  # a tool may return an exit status
