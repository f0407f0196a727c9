"""Bad inputs and fuzzing: every chunker must chunk correctly or say clearly what is wrong.

Readers will point ragkit at messy documents. For each input below and each chunker, the
outcome must be one of two things: chunks that satisfy the invariants (every chunk's text is its
span, every non-whitespace character is covered, chunks are sorted), or a `DocumentError` whose
message starts with ``path:line:``. Anything else — a crash, a lost character, a wrong offset —
is a failure.

The inputs are generated, not stored: an empty file, only headings, one 10 MB line (1 MB in the
test suite), bytes that are not UTF-8, CRLF endings, tabs and non-breaking spaces, ragged
tables and tables without a separator row, lists nested six deep, ``#`` lines inside fenced
code, HTML blocks, front matter with wrong types, duplicate headings, one sentence repeated
10,000 times.

For late chunking, one more input: a Markdown document of a million MiniLM tokens
(`million_token_text`). Each chunker's chunks of it must map onto the document's tokens as late
chunking needs (`late_input`): one token range per chunk, every token in a chunk, windows that
supply every token exactly once. ``--late-forward`` also embeds it, chunk vectors and all, and
prints the peak memory.

Around the chunkers, the suite tries what a reader touches after the course, in areas
(`AREAS`): ``documents`` (every hostile input x every chunker), ``folders`` (every file loaded
or skipped with its reason and counted), ``golden files`` (malformed variants x JSONL / CSV,
with and without a byte-order mark, CRLF), ``CLI`` (real subprocesses: exit codes, no
traceback), ``caches`` (U+2028 in cached text, bad bytes, unwritable folders, corrupt shards),
``caps`` (documents that crowd a size cap x every chunker that promises one),
``concurrency`` (processes appending to one results file keep every row), ``environment``
(bad ``RAGKIT_*`` variables, hub ids and paths as model names, the Anthropic generator offline:
real subprocesses, one line, no file changed), ``output paths`` (no command writes over a
file it reads; a symlinked output is written through; a failed write leaves the old file),
``golden evidence`` (the same quote twice, overlapping quotes, span offsets counted in the raw
file, CSV quotes never closed), ``unicode forms`` (quotes and ids in NFC and NFD),
``numeric limits`` (huge JSON integers, deep nesting, --k 2147483648 and the other numeric
arguments) and ``reader data`` (odd file names printed escaped, lone surrogates in questions,
an option given twice, front matter past its cap, an index of another version of the corpus).

    ragkit robustness              # every area: a few minutes on 2 CPUs
    ragkit robustness --fuzz-seconds 600 --big-line-mb 10 --late-tokens 1000000
    ragkit robustness --areas "golden files,CLI"
    ragkit robustness --fuzz-seconds 30 --late-tokens 1000000 --late-forward

prints, per area, how many cases were tried and how many failed (and the fuzz examples and
late-chunking runs when asked for). ``python -m ragkit.tools.robustness`` is the same.

One module per area (`inputs` holds the documents area and the fuzzer, `late` the
million-token input); each exposes ``run(ctx) -> Area`` and is listed in `AREAS`. `base` has
what they share.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from . import (caches, caps, cli, concurrency, environment, folders, golden, golden_evidence,
               inputs, numeric_limits, output_paths, reader_data, unicode_forms)
from .base import Area, Context
from .inputs import BadInput, bad_inputs, default_chunkers, fuzz, run_input, uses_model
from .late import late_input, late_suite, million_token_text

__all__ = ["AREAS", "Area", "BadInput", "Context", "bad_inputs", "default_chunkers", "fuzz",
           "late_input", "late_suite", "main", "million_token_text", "run_areas", "run_input",
           "uses_model"]

# Everything a reader touches: documents, folders, golden files, the command line, caches, size
# caps, concurrent runs, output paths. Each area runs its cases in a folder of its own.
AREAS: dict[str, Callable[[Context], Area]] = {
    "documents": inputs.run,
    "folders": folders.run,
    "golden files": golden.run,
    "CLI": cli.run,
    "caches": caches.run,
    "caps": caps.run,
    "concurrency": concurrency.run,
    "environment": environment.run,
    "output paths": output_paths.run,
    "golden evidence": golden_evidence.run,
    "unicode forms": unicode_forms.run,
    "numeric limits": numeric_limits.run,
    "reader data": reader_data.run,
}


def run_areas(folder: Path, chunkers: dict | None = None, big_line_mb: float = 2,
              quick: bool = False, only: tuple[str, ...] = tuple(AREAS)) -> list[Area]:
    """Every area of the suite (or `only` some), in `AREAS` order, each in a sub-folder of
    `folder`; `quick` is the subset the tests run."""
    chunkers = chunkers or default_chunkers()
    out = []
    for name, run in AREAS.items():
        if name in only:
            sub = folder / name.replace(" ", "-").lower()
            sub.mkdir(parents=True, exist_ok=True)
            out.append(run(Context(sub, chunkers, big_line_mb, quick)))
    return out


def main(argv: list[str] | None = None, prog: str = "ragkit robustness") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fuzz-seconds", type=float, default=0,
                   help="fuzzing time, shared by the chunkers (default 0; make fuzz: 600)")
    p.add_argument("--big-line-mb", type=float, default=2,
                   help="size of the one-line input in MB (default 2; make fuzz: 10)")
    p.add_argument("--late-tokens", type=int, default=0,
                   help="size of the late-chunking input in MiniLM tokens (default 0 = off; "
                        "make fuzz: 1,000,000)")
    p.add_argument("--late-forward", action="store_true",
                   help="also embed the late-chunking input with one chunker and report memory")
    p.add_argument("--quick", action="store_true", help="the subset the tests run")
    p.add_argument("--areas", default=",".join(AREAS),
                   help=f"comma-separated areas (default all: {', '.join(AREAS)})")
    p.add_argument("--record", action="store_true",
                   help=f"write the counts to results/{RECORD} (make fuzz does; the README's "
                        "reliability table is generated from it)")
    args = p.parse_args(argv)
    only = tuple(x.strip() for x in args.areas.split(",") if x.strip())
    unknown = [x for x in only if x not in AREAS]
    if unknown:
        p.error(f"unknown area(s) {unknown}; choose from {', '.join(AREAS)}")
    chunkers = default_chunkers()
    t0 = time.perf_counter()
    import warnings

    from ...cache import CacheWarning

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)  # the cases check them themselves
        areas = run_areas(Path(tmp), chunkers, args.big_line_mb, args.quick, only)
    failed = sum(len(a.failures) for a in areas)
    for a in areas:
        for line in a.failures[:20]:
            print(f"  FAILED {a.name}: {line}")
        if len(a.failures) > 20:
            print(f"  ... {len(a.failures) - 20} more failures in {a.name}")
    extra = []
    if args.fuzz_seconds > 0:
        per = args.fuzz_seconds / max(1, len(chunkers))
        tried_all, fails_all = 0, 0
        for name, chunker in chunkers.items():
            tried, fails = fuzz(chunker, seconds=per)
            tried_all += tried
            fails_all += len(fails)
            for line in fails[:3]:
                print(f"  FAILED fuzz {name}: {line}")
        extra.append(("fuzz examples", tried_all, fails_all))
        failed += fails_all
    if args.late_tokens > 0:
        late_rows, late_failed = late_suite(chunkers, args.late_tokens, args.late_forward)
        print(f"\nlate chunking, {args.late_tokens:,}-token document:")
        for line in late_rows:
            print("  " + line)
        runs = sum(": ok" in line or "FAILED" in line for line in late_rows)
        extra.append(("late chunking", runs, late_failed))
        failed += late_failed
    print(f"\n{'area':<16} {'tried':>7} {'failed':>7}")
    for a in areas:
        print(f"{a.name:<16} {a.tried:>7} {len(a.failures):>7}")
    for name, tried, fails in extra:
        print(f"{name:<16} {tried:>7} {fails:>7}")
    tried = sum(a.tried for a in areas)
    seconds = time.perf_counter() - t0
    print(f"total: {tried} cases tried ({len(chunkers)} chunkers), {failed} failed, "
          f"{seconds:.0f} s")
    if args.record:
        path = record(areas, extra, vars(args), len(chunkers), seconds)
        print(f"recorded in {path}")
    return 1 if failed else 0


RECORD = "robustness.json"


def record(areas: list[Area], extra: list[tuple[str, int, int]], args: dict, chunkers: int,
           seconds: float) -> Path:
    """Write what a run found to ``results/robustness.json`` (the README's reliability table is
    generated from it): per area the cases tried, how many failed and the first failure, and
    the run's arguments."""
    import json
    from datetime import datetime, timezone

    from ...cache import atomic_write_text
    from ...config import get_settings

    rows = [{"area": a.name, "checks": area_doc(a.name), "tried": a.tried,
             "failed": len(a.failures), "worst": a.failures[0] if a.failures else ""}
            for a in areas]
    rows += [{"area": name, "checks": "", "tried": tried, "failed": fails, "worst": ""}
             for name, tried, fails in extra]
    out = {"areas": rows, "chunkers": chunkers, "seconds": round(seconds, 1),
           "args": {k: v for k, v in args.items() if k != "record"},
           "finished": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    path = get_settings().results_dir / RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    return path


def area_doc(name: str) -> str:
    """The first sentence of an area module's docstring: what its cases check.

    >>> area_doc("concurrency")
    'Concurrency: processes appending to one results file keep every row.'
    """
    doc = sys.modules[AREAS[name].__module__].__doc__ or ""
    return " ".join(doc.split("\n\n")[0].split())
