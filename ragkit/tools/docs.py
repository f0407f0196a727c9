"""``ragkit docs`` (``make docs``): the API reference, generated from the docstrings by pdoc, into
``docs/api/`` (not committed; open ``docs/api/index.html``).

Every module of ragkit is documented, the tools included. pdoc reaches a package's modules
through its ``__all__``, and each stage's ``__all__`` names its public surface rather than its
modules, so every module a surface leaves out is named here (`modules`). Any warning pdoc gives
(an annotation it cannot resolve, a module it cannot import, a module named twice) is printed
and fails the build: the reference builds clean or not at all.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import shutil
import sys
import warnings
from pathlib import Path

from ..config import PROJECT_ROOT
from .common import Parser, prepare

OUT = PROJECT_ROOT / "docs" / "api"


def modules() -> list[str]:
    """The module names to hand pdoc: the package, and every public module that its parent's
    ``__all__`` leaves out (pdoc reaches the others from their parent)."""
    import ragkit

    out = ["ragkit"]
    for info in pkgutil.walk_packages(ragkit.__path__, "ragkit."):
        parent, _, name = info.name.rpartition(".")
        if name.startswith("_"):
            continue
        listed = getattr(importlib.import_module(parent), "__all__", None)
        if listed is not None and name not in listed:
            out.append(info.name)
    return out


# What pdoc writes at the top of its output folder: a folder of only these (a reference built
# before `ragkit docs` left its marker) is one `ragkit docs` made.
PDOC_NAMES = ("index.html", "search.js", "ragkit.html", "ragkit")


def build(out: Path = OUT) -> list[str]:
    """Write the reference into `out`, replacing it only when it is one that `ragkit docs`
    made (`ragkit.tools.outputs.check_folder`: new, empty, or holding its marker); the
    warnings pdoc gave. `OutputError` for any other folder or a file: nothing is removed."""
    import pdoc
    import pdoc.render

    from .outputs import check_folder, mark_folder

    check_folder(out, "--out", "docs", also=_pdoc_only(out))
    pdoc.render.configure(docformat="restructuredtext", footer_text="ragkit")
    if out.exists():
        shutil.rmtree(out)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc(*modules(), output_directory=out)
    mark_folder(out, "docs")
    return [f"{w.category.__name__}: {w.message}" for w in caught]


def _pdoc_only(out: Path) -> tuple[str, ...]:
    """The names in `out` when every one of them is one pdoc writes (a reference built before
    the marker), else none."""
    try:
        names = {p.name for p in out.iterdir()} if out.is_dir() else set()
    except OSError:
        return ()
    return tuple(names) if names and names <= set(PDOC_NAMES) else ()


def main(argv: list[str] | None = None, prog: str = "ragkit docs") -> int:
    p = Parser(prog=prog, description=__doc__,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, default=OUT,
                   help="the folder to write (default: %(default)s)")
    args = p.parse_args(argv)
    prepare()
    from ..files import shown
    from .outputs import OutputError

    try:
        problems = build(args.out)
    except OutputError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    for line in problems:
        print(f"{prog}: {line}", file=sys.stderr)
    pages = sum(1 for _ in args.out.rglob("*.html"))
    print(f"{shown(args.out)}: {pages} pages"
          + (f", {len(problems)} warning(s)" if problems else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
