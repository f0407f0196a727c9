"""What every tool shares: the exit codes, argparse with one-line errors (`Parser`) and the
number checks of every command line (`bounded`), the ``RAGKIT_*`` check (`environment_error`),
and what every tool does before its work (`prepare`: stay offline, check, seed).

`ragkit.tools.cli` (the ``ragkit`` command) and each tool import these from here, so no tool
imports the command that dispatches to it."""

from __future__ import annotations

import argparse
from typing import Any, Callable


def prepare() -> None:
    """Offline by default (the models are bundled), the ``RAGKIT_*`` variables checked, and
    every random generator seeded. A bad variable ends the tool here with one line naming it
    and exit code 2 (as ``ragkit NAME`` does before it starts the tool), also when the tool is
    run as ``python -m ragkit.tools.NAME``."""
    import sys

    from ..config import seed_everything
    from ..environment import offline_defaults

    offline_defaults()

    problem = environment_error()
    if problem:
        print(f"ragkit: {problem}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)
    seed_everything()


def run_script(doc: str, prog: str, add_arguments: Callable[[argparse.ArgumentParser], None],
               run_args: Callable[[argparse.Namespace], Any],
               argv: list[str] | None = None) -> int:
    """A one-command tool: its parser (`add_arguments`, on a `Parser`: one-line errors, an
    option that takes one value given once), `prepare`, then `run_args`; exit 0, or the
    status `run_args` returns when it returns an int."""
    p = Parser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    args = p.parse_args(argv)
    prepare()
    code = run_args(args)
    return code if isinstance(code, int) else 0  # a tool may return an exit status


EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_FATAL, EXIT_BUG = 0, 1, 2, 3, 4


class _StoreOnce(argparse._StoreAction):
    """An option that takes one value: given twice (``--golden a --golden b``) it is a usage
    error naming it, not the last one silently winning."""

    def __call__(self, parser, namespace, values, option_string=None):  # noqa: D102
        given = namespace.__dict__.setdefault("_given_once", set())
        if option_string is not None and self.dest in given:
            parser.error(f"{'/'.join(self.option_strings)} given more than once; it takes one "
                         "value")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


class Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line (and exit code 2), and an option that takes one
    value refused when it is given twice (`_StoreOnce`)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def error(self, message: str):  # noqa: D102 - argparse's hook
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_known_args(self, args=None, namespace=None):  # noqa: D102
        found, rest = super().parse_known_args(args, namespace)
        found.__dict__.pop("_given_once", None)
        return found, rest


# The largest numbers the command line takes, checked before anything is loaded: faiss allocates
# k result slots per question (--k 2147483648 aborted the process with std::bad_alloc).
MAX_K = 10_000          # --k: chunks retrieved per question
MAX_SIZE = 1_000_000    # a chunker's SIZE and OVERLAP (characters or tokens)
MAX_LIMIT = 1_000_000   # chunk --limit: chunks printed


def add_smoke(p: argparse.ArgumentParser, what: str = "a small slice") -> None:
    """The ``--smoke`` flag of every bench: it runs `what` instead, to check the machinery."""
    p.add_argument("--smoke", action="store_true", help=f"{what}, to check the machinery")


def whole_number(value: str, low: int, high: int) -> int:
    """`value` as a whole number from `low` to `high` (``1,000,000`` and ``1_000_000`` read as
    one million); `argparse.ArgumentTypeError` saying which bound it passed (a number too long
    to read is past the maximum, not a traceback)."""
    text = value.strip().replace(",", "").replace("_", "")
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit():
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number")
    if len(digits.lstrip("0")) > 18:  # past any maximum; int() refuses 4,300+ digits
        got = "a number of %d digits" % len(digits.lstrip("0"))
        if text.startswith("-"):
            raise argparse.ArgumentTypeError(f"must be at least {low}, got -{got[2:]}")
        raise argparse.ArgumentTypeError(f"must be at most {high}, got {got}")
    n = int(text)
    if n < low:
        raise argparse.ArgumentTypeError(f"must be at least {low}, got {n}")
    if n > high:
        raise argparse.ArgumentTypeError(f"must be at most {high}, got {n}")
    return n


def positive_int(value: str) -> int:
    """--k: a whole number from 1 to `MAX_K`."""
    return whole_number(value, 1, MAX_K)


def bounded(low: int, high: int):
    """An argparse type: a whole number from `low` to `high` (`whole_number`), for the tools'
    counts, budgets and sizes."""
    def number(value: str) -> int:
        return whole_number(value, low, high)

    number.__name__ = "whole number"
    return number


def numbers(low: int, high: int, empty: bool = False):
    """An argparse type: comma-separated whole numbers, each from `low` to `high`
    (`whole_number`), in the order given; an empty list only where `empty` allows one.

    >>> numbers(50, 1000)("1000, 1500")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be at most 1000, got 1500
    >>> numbers(1, 10, empty=True)(" , ")
    []
    """
    def parse(value: str) -> list[int]:
        found = [whole_number(piece, low, high) for piece in value.split(",") if piece.strip()]
        if not found and not empty:
            raise argparse.ArgumentTypeError(f"needs at least one number, got {value!r}")
        return found

    parse.__name__ = "comma-separated whole numbers"
    return parse


def names(choices: tuple[str, ...] | list[str], what: str, empty: bool = True):
    """An argparse type: comma-separated names, each one of `choices` (`what` says what they
    are, in the error), in the order given; an empty list only where `empty` allows one.

    >>> names(("course", "chroma"), "benchmark(s)")("chroma, wiki")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: unknown benchmark(s) ['wiki']; choose from course, chroma
    """
    def parse(value: str) -> list[str]:
        found = [name.strip() for name in value.split(",") if name.strip()]
        unknown = sorted(set(found) - set(choices))
        if unknown or (not found and not empty):
            raise argparse.ArgumentTypeError(
                f"unknown {what} {unknown or [value]}; choose from {', '.join(choices)}")
        return found

    parse.__name__ = "comma-separated names"
    return parse


def environment_error() -> str | None:
    """The one-line problem with the ``RAGKIT_*`` variables
    (`ragkit.environment.check_environment`: a value outside its allowed ones, a folder that is
    not there), or None. Every subcommand, the tools included, runs it first: a bad variable is
    exit code 2, before any work."""
    from ..config import SettingsError
    from ..environment import check_environment

    try:
        check_environment()
    except SettingsError as e:
        return str(e)
    return None


def cache_state(mb: float | None) -> str | None:
    """``"empty"`` or ``"warm"``: the vector cache a whole run started from (None: unknown).

    >>> cache_state(0.0), cache_state(213.3), cache_state(None)
    ('empty', 'warm', None)
    """
    return None if mb is None else "warm" if mb else "empty"
