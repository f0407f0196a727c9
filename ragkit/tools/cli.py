"""The `ragkit` command: run the course's comparison on your own documents, and every tool.

    ragkit chunk PATH --strategy structure            # chunks + linter report
    ragkit eval --corpus DIR --golden FILE --strategies recursive:250/0,structure
    ragkit show --corpus DIR --golden FILE --question 3 --strategies ...

The tools in `ragkit.tools` are reached through it too, each with its own options (``ragkit
NAME --help``): ``ragkit bench NAME`` (the benchmark scripts), ``ragkit preambles`` (fill a
preamble cache), ``ragkit reproduce`` (run the notebooks), ``ragkit readme`` (regenerate the
README's results), ``ragkit robustness`` (bad inputs and fuzzing), ``ragkit golden`` (quotes to
span-anchored gold). They keep their own exit codes; what follows is about chunk, eval and show.

Golden files are JSONL or CSV. Each question gives its evidence as verbatim quotes
(``{"id", "question", "type", "evidence": [{"doc_id"?, "quote"}]}``, or CSV columns
``id,question,quote,doc_id``); ragkit finds each quote in the documents and scores against its
span. A quote that is missing or occurs more than once is reported with its line and skipped —
never guessed. Files that cannot be read are reported and skipped too; the run continues.
A folder's README, its hidden files and folders and backup files (``--include-hidden`` reads
these) and second paths to a file already read (links) are left out, counted and named. No
output (``--out``, ``--results``) may be one of the files a command reads: that is refused
before anything is written. An output is a regular file or a new path (never a folder, a pipe
or a device, never under a file: named up front), and rows are appended to ``--results`` in
place (its mode, its inode and its old rows kept); ``ragkit.tools.outputs`` has the rule, and
the folder rule of ``ragkit docs`` and ``ragkit index``. An option that takes one value may be
given once; file names are printed escaped (a newline, a terminal code).

Exit codes: 0 = done, nothing to report; 1 = done, but some files or questions were skipped
(see the summary); 2 = bad command line, or a ``RAGKIT_*`` variable ragkit cannot use
(a one-line reason naming it); 3 = nothing to evaluate (no
readable documents or no usable question), or an input or environment ragkit cannot use (an
unreadable questions file, a corrupt results file). None of these prints a traceback;
``--debug`` does. A traceback without ``--debug`` is a bug in ragkit (exit 4).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

from ..files import shown
from .common import (EXIT_BUG, EXIT_FATAL, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, MAX_K, MAX_LIMIT,
                     MAX_SIZE, Parser, environment_error, positive_int, whole_number)

# The tools behind `ragkit NAME ...`: module in ragkit.tools, and its line in `ragkit --help`.
TOOLS = {
    "bench": ("bench", "the benchmark scripts: ragkit bench NAME (see ragkit bench --help)"),
    "preambles": ("preambles", "fill a committed preamble cache with one generator"),
    "reproduce": ("reproduce", "run the course notebooks in order (make reproduce / smoke)"),
    "readme": ("readme", "regenerate the README's results section from the results rows"),
    "robustness": ("robustness", "bad inputs, folders, golden files, CLI, caches: per area"),
    "golden": ("golden", "build span-anchored gold from quoted evidence"),
    "index": ("index_build", "chunk + embed a folder or HF dataset into shards, build an index"),
    "smoke-diff": ("smoke_diff",
                   "compare the results rows of two runs (timestamps, git sha aside)"),
    "verdict-diff": ("verdict_diff",
                     "do two runs (float32 and bf16, two machines) reach the same verdicts?"),
    "docs": ("docs", "build the API reference from the docstrings (pdoc) into docs/api/"),
    "rescore": ("rescore", "score saved runs again from their ranked hits, under today's rules"),
}
DEFAULT_STRATEGIES = "fixed_chars:1000/200,recursive:250/0"


class CliError(Exception):
    """A fatal input problem: printed without a traceback, exit code 3 (or `code`)."""

    def __init__(self, message: str, code: int = EXIT_FATAL):
        super().__init__(message)
        self.code = code


class UsageError(CliError):
    """A bad command line: one line, exit code 2."""

    def __init__(self, message: str):
        super().__init__(message, EXIT_USAGE)


def path_arg(value: str) -> str:
    """A path on the command line; an empty one (``--corpus ""``, which would be the current
    folder) is a usage error."""
    if not value.strip():
        raise argparse.ArgumentTypeError("the path is empty")
    return value


def parse_strategies(spec: str) -> list:
    """Chunkers from a comma-separated spec; `argparse.ArgumentTypeError` naming the bad one."""
    from ..chunkers import BASELINES, REGISTRY, get_chunker, simple_baselines

    names = [s.strip() for s in spec.split(",")]
    if not any(names):
        raise argparse.ArgumentTypeError(f"{spec!r} names no strategy")
    out, named = [], []
    for s in names:
        if not s:
            raise argparse.ArgumentTypeError(f"{spec!r} has an empty entry")
        if s == BASELINES:  # every simple baseline the course compares with
            out += simple_baselines()
            named += [s] * (len(out) - len(named))
            continue
        name, colon, sizes = s.partition(":")
        if name not in REGISTRY:
            raise argparse.ArgumentTypeError(
                f"unknown chunker {name!r} in {s!r}; choose from {', '.join(sorted(REGISTRY))}")
        if colon:
            size, slash, overlap = sizes.partition("/")
            if not size.strip().isdigit() or (slash and not overlap.strip().isdigit()):
                raise argparse.ArgumentTypeError(
                    f"{s!r}: expected NAME:SIZE or NAME:SIZE/OVERLAP with whole numbers")
            try:
                n_size = whole_number(size, 0, MAX_SIZE)
            except argparse.ArgumentTypeError as e:
                raise argparse.ArgumentTypeError(f"{s!r}: SIZE {e}") from None
            if n_size <= 0 or (slash and (len(overlap.strip()) > len(size.strip())
                                          or int(overlap) >= n_size)):
                raise argparse.ArgumentTypeError(
                    f"{s!r}: need SIZE > 0 and 0 <= OVERLAP < SIZE")
        try:
            out.append(get_chunker(s))
        except TypeError:
            raise argparse.ArgumentTypeError(f"{s!r}: chunker {name!r} takes no SIZE/OVERLAP; "
                                             f"write just {name!r}") from None
        except (KeyError, ValueError) as e:
            raise argparse.ArgumentTypeError(f"{s!r}: {e}") from None
        named.append(s)
    return _once(named, out)


def _once(specs: list[str], chunkers: list) -> list:
    """Each strategy once: one named twice (the same chunker and sizes, however written) would
    run twice and append its rows twice; it runs once, with a warning."""
    first: dict[str, str] = {}
    out = []
    for spec, chunker in zip(specs, chunkers):
        label = getattr(chunker, "label", spec)
        if label in first:
            print(f"ragkit: warning: strategy {spec!r} is named twice (also as "
                  f"{first[label]!r}); it runs once", file=sys.stderr)
            continue
        first[label] = spec
        out.append(chunker)
    return out


def _load_docs(path: str, include_hidden: bool = False):
    """The `Corpus` of a file or a folder (a file: one document, itself its only input)."""
    from ..text.corpus import Corpus, load_corpus
    from ..text.documents import DocumentError, load_document

    p = Path(path)
    if p.is_file():
        try:
            return Corpus([load_document(p)], inputs=[str(p)])
        except DocumentError as e:
            raise CliError(f"nothing to chunk: {e}") from None
    if not p.is_dir():
        raise CliError(f"{shown(path)}: no such file or folder")
    corpus = load_corpus(p, strict=False, include_hidden=include_hidden)
    if not corpus.documents:
        raise CliError(f"{shown(path)}: no readable documents" + "".join(f"\n  {e}" for e in
                                                                          corpus.errors))
    return corpus


def _safe_output(out: str | Path, inputs, flag: str) -> Path:
    """`out`, checked by `ragkit.tools.outputs.check_output` before anything is written: one of the
    command's inputs is a usage error (exit 2) naming both paths."""
    from .outputs import OutputError, check_output

    try:
        return check_output(out, inputs, flag)
    except OutputError as e:
        raise UsageError(str(e)) from None


def _load_folder(corpus: str, golden: str, include_hidden: bool = False):
    """(benchmark, file errors, question problems) — see `benchmarks.load_folder`."""
    from ..evaluate.benchmarks import load_folder
    from ..evaluate.questions import GoldenError

    if not Path(corpus).is_dir():
        raise CliError(f"{shown(corpus)}: no such folder")
    if not Path(golden).is_file():
        raise CliError(f"{shown(golden)}: no such file")
    try:
        bench, errors, problems = load_folder(corpus, golden, include_hidden=include_hidden)
    except GoldenError as e:
        raise CliError(f"nothing to evaluate: {e}") from None
    if not bench.documents:
        raise CliError(f"{shown(corpus)}: no readable documents"
                       + "".join(f"\n  {e}" for e in errors))
    return bench, errors, problems


_EMBEDDERS: dict = {}


def _embedder(model: str | None):
    """The embedder, loaded now so that a model that cannot be loaded is a one-line error
    (exit 2), not a traceback in the middle of the run."""
    from ..embed.encoders import Embedder
    from ..models import ModelNotFound, locate_model

    if model in _EMBEDDERS:
        return _EMBEDDERS[model]
    try:  # a folder, a path that must exist, or a hub id (offline: in the local cache)
        if model and model != "minilm":
            locate_model(model, "--embedder")
        emb = Embedder(model)
    except ModelNotFound as e:  # names --embedder or RAGKIT_EMBEDDER, the model and why
        raise UsageError(str(e)) from None
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # no "Loading weights" bar on stderr: errors stay one line
    try:
        emb.model  # noqa: B018 - load it now
    except Exception as e:  # noqa: BLE001 - any failure to load is the argument's
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UsageError(f"--embedder {model}: cannot be loaded ({reason[:200]})") from e
    finally:
        if shown:
            hf_logging.enable_progress_bar()
    _EMBEDDERS[model] = emb
    return emb


def _check_results_file(path: Path) -> None:
    """Refuse, before any work, a results file that cannot be appended to."""
    from ..report.results import read_rows

    if path.exists() and not path.is_file():
        raise UsageError(f"--results {shown(path)}: not a file")
    if path.exists():
        try:
            read_rows(path)
        except (ValueError, OSError) as e:
            raise CliError(f"results file {e}; fix or move it, or give --results another "
                           "file") from None
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise CliError(f"results file {shown(path)}: {shown(parent)} is not writable; give "
                       "--results another file")


def cmd_chunk(a) -> int:
    if a.out and Path(a.path).is_file():  # refused before the document is even read
        _safe_output(a.out, [a.path], "--out")
    corpus = _load_docs(a.path, a.include_hidden)
    docs, errors = corpus.documents, corpus.errors
    if a.out:
        _safe_output(a.out, corpus.inputs, "--out")
    chunker = a.strategy[0]
    rows = []
    for doc in docs:
        for c in chunker.chunk(doc):
            rows.append({"id": c.id, "doc_id": c.doc_id, "start": c.start, "end": c.end,
                         "prefix": c.prefix, "text": c.text, "strategy": c.strategy})
    if a.out:
        from ..files import write_whole

        try:
            write_whole(a.out, "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                       for r in rows).encode("utf-8"))
        except OSError as e:
            raise CliError(f"--out {shown(a.out)}: cannot be written ({e.strerror or e})"
                           ) from None
        print(f"{len(rows)} chunks written to {shown(a.out)}")
    else:
        for r in rows[: a.limit]:
            body = " ".join(r["text"].split())
            print(f"{shown(r['doc_id'])}[{r['start']}:{r['end']}] {shown(body[:90])}")
        if len(rows) > a.limit:
            print(f"... {len(rows) - a.limit} more (use --out FILE to write them all)")
    _print_lint(docs, chunker, a.embedder)
    _print_left_out(corpus.summary())
    return _finish(errors, [])


def _print_lint(docs, chunker, model):
    try:
        from ..chunkers.lint import lint_corpus
    except ImportError:  # pragma: no cover - the linter ships with ragkit
        return
    print("\nlinter:")
    print(lint_corpus(docs, chunker, tokenizer=_embedder(model)).to_string(index=False))


def cmd_eval(a) -> int:
    from ..config import get_settings, seed_everything
    from ..experiments.pipeline import compare
    from ..report.results import Recorder, append_rows

    seed_everything()
    results = Path(a.results or get_settings().results_dir / "cli_eval.jsonl")
    bench, errors, problems = _load_folder(a.corpus, a.golden, a.include_hidden)
    _safe_output(results, [a.golden, *bench.info["input_files"], *([a.index] if a.index
                                                                      else [])], "--results")
    _check_results_file(results)
    answerable = [q for q in bench.queries if q.gold]
    if not answerable:
        _report(errors, problems)
        raise CliError(f"{a.golden}: no question could be anchored to the documents")
    refusals = len(bench.queries) - len(answerable)  # not scored by span metrics: say so
    if a.index:  # an index of another version of this corpus: refused before the model loads
        from .index_build import check_corpus

        try:
            check_corpus(a.index, bench.documents)
        except ValueError as e:
            raise CliError(f"--index {shown(a.index)}: {e}") from None
    emb = _embedder(a.embedder)
    rec = Recorder("cli_eval")
    if a.index:  # the golden set against a prebuilt index (`ragkit index`)
        return _eval_index(a, bench, emb, rec, results, errors, problems)
    table = compare([bench], a.strategies, emb, rec, k=a.k, experiment="eval")
    table = table.sort_values(["recall", "iou", "strategy"], ascending=[False, False, True])
    print(f"\n{len(bench.documents)} documents, {len(answerable)} answerable questions, "
          f"k = {a.k}\n")
    cols = ["recall", "precision", "iou", "pass@k", "mrr@k", "ndcg@10"]
    width = max(len(s) for s in table.strategy)
    print(f"{'#':>2}  {'strategy':<{width}}  " + "  ".join(f"{c:>9}" for c in cols)
          + "  chunks  flags")
    for i, r in enumerate(table.to_dict("records"), 1):
        print(f"{i:>2}  {r['strategy']:<{width}}  "
              + "  ".join(f"{100 * r[c]:>8.1f}%" for c in cols)
              + f"  {int(r['n_chunks']):>6}  {r['flags'] or '-'}")
    if refusals:
        print(f"\n{refusals} refusal question(s) (no evidence by design) not scored")
    _print_left_out(bench.info["left_out"])
    try:
        append_rows(results, rec.rows)
    except (ValueError, OSError) as e:
        _report(errors, problems)
        raise CliError(f"the table above was not saved: results file {e}") from None
    print(f"\nrows appended to {shown(results)}")
    return _finish(errors, problems)


def _eval_index(a, bench, emb, rec, results, errors, problems) -> int:
    from ..report.results import append_rows
    from .index_build import evaluate_index

    try:
        out = evaluate_index(bench, a.index, emb, a.k)
    except (ValueError, OSError) as e:
        raise CliError(f"--index {shown(a.index)}: {e}") from None
    means = out.means
    print(f"\n{shown(a.index)}: {len([q for q in bench.queries if q.gold])} answerable questions, "
          f"k = {a.k} (searched {out.depth} deep for nDCG@10 and the budgets)")
    for m in ("recall", "precision", "iou", "pass@k", "mrr@k", "ndcg@10",
              *(f"{m}@B{b}" for b in out.budgets for m in ("recall", "pass", "iou"))):
        print(f"  {m:<12} {100 * means.get(m, float('nan')):6.1f}%")
    out.record(rec, experiment="eval_index", embedder=emb.name, k=a.k)
    append_rows(results, rec.rows)
    print(f"\nrows appended to {shown(results)}")
    return _finish(errors, problems)


def cmd_show(a) -> int:
    from ..evaluate.benchmarks import Benchmark
    from ..evaluate.spans import overlaps
    from ..experiments.pipeline import run_experiment
    from ..report.explain import diagnose

    from ..text.locate import nfc

    full, errors, problems = _load_folder(a.corpus, a.golden, a.include_hidden)
    docs, queries = full.documents, full.queries
    a.question = nfc(str(a.question).strip())  # ids are compared in NFC, as the golden file's
    match = [q for q in queries if q.id == a.question]
    if not match and str(a.question).isdigit() and 1 <= int(a.question) <= len(queries):
        match = [queries[int(a.question) - 1]]
    if not match:
        skipped = [p for p in problems if f"({a.question}):" in p]
        _report(errors, problems)
        raise CliError(f"question {a.question!r} was skipped: {skipped[0]}" if skipped
                       else f"question {a.question!r} not found in {a.golden}")
    q = match[0]
    by_id = {d.id: d for d in docs}
    print(f"Q {q.id}: {q.text}\n")
    for g in q.gold:
        print(f"gold {shown(g.doc_id)}[{g.start}:{g.end}]: "
              f"{by_id[g.doc_id].text[g.start:g.end]}\n")
    bench = Benchmark("corpus", docs, [q])
    emb = _embedder(a.embedder)
    for chunker in a.strategies:
        out = run_experiment(bench, chunker, emb, k=a.k)
        d = diagnose(q, out.chunks, out.hits[q.id], a.k) if q.gold else {"verdict": "-"}
        print(f"=== {out.strategy}  (verdict: {d['verdict']})")
        for rank, h in enumerate(out.hits[q.id][: a.k], 1):
            mark = "*" if overlaps(h.chunk, q.gold) else " "
            body = " ".join(h.chunk.text.split())
            print(f" {mark}{rank}. {shown(h.chunk.doc_id)}[{h.chunk.start}:{h.chunk.end}] "
                  f"{h.score:.3f}  {body[:110]}")
        print()
    print("* = overlaps the gold")
    _print_left_out(full.info["left_out"])
    return _finish(errors, problems)


def _print_left_out(lines: list[str]) -> None:
    """The files a folder load left out, counted and named (`Corpus.summary`)."""
    if lines:
        print()
        for line in lines:
            print(line)


def _report(errors, problems) -> None:
    if errors or problems:
        print(f"\nskipped: {len(errors)} file(s), {len(problems)} question(s)", file=sys.stderr)
        for line in [*errors, *problems]:
            print(f"  {line}", file=sys.stderr)


def _finish(errors, problems) -> int:
    _report(errors, problems)
    return EXIT_PROBLEMS if errors or problems else EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="ragkit", description=__doc__,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND",
                           parser_class=Parser)
    strategies_help = ("comma-separated chunkers, each NAME or NAME:SIZE/OVERLAP ('baselines': "
                       "every simple baseline the course compares with), e.g. "
                       "recursive:250/0,structure (names: see ragkit.chunkers.REGISTRY)")

    c = sub.add_parser("chunk", help="chunk a file or folder; print chunks and the lint report")
    c.add_argument("path", type=path_arg, help="a file or a folder of documents")
    c.add_argument("--strategy", default="recursive:250/0", type=_one_strategy,
                   help="one chunker spec")
    c.add_argument("--out", type=path_arg, help="write every chunk as JSONL here (never "
                                                  "over one of the documents)")
    c.add_argument("--limit", type=_count, default=20, help="chunks to print (default 20)")
    c.add_argument("--embedder", help="model whose token limit the linter checks")
    c.set_defaults(func=cmd_chunk)

    e = sub.add_parser("eval", help="compare strategies on your corpus and golden set")
    e.add_argument("--corpus", required=True, type=path_arg, help="folder of documents")
    e.add_argument("--golden", required=True, type=path_arg,
                   help="questions (JSONL or CSV) with quotes")
    e.add_argument("--strategies", default=DEFAULT_STRATEGIES, type=parse_strategies,
                   help=strategies_help)
    e.add_argument("--embedder", help="sentence-transformers hub id or local folder "
                                      "(default: the bundled all-MiniLM-L6-v2)")
    e.add_argument("--k", type=positive_int, default=5,
                   help=f"chunks retrieved per question (1 to {MAX_K:,})")
    e.add_argument("--results", type=path_arg, help="results file to append rows to "
                                     "(default: results/cli_eval.jsonl; never an input)")
    e.add_argument("--index", type=path_arg,
                   help="evaluate against a folder built by `ragkit index` "
                        "(instead of chunking with --strategies)")
    e.set_defaults(func=cmd_eval)

    s = sub.add_parser("show", help="one question: the gold and what each strategy retrieved")
    s.add_argument("--corpus", required=True, type=path_arg)
    s.add_argument("--golden", required=True, type=path_arg)
    s.add_argument("--question", required=True, help="question id, or its 1-based position")
    s.add_argument("--strategies", default=DEFAULT_STRATEGIES, type=parse_strategies,
                   help=strategies_help)
    s.add_argument("--embedder")
    s.add_argument("--k", type=positive_int, default=5)
    for sp in (c, e, s):
        sp.add_argument("--include-hidden", action="store_true",
                        help="also read hidden files and folders (.git, .ipynb_checkpoints) "
                             "and backup files (x~, x.bak), excluded by default")
        sp.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks for errors")
    s.set_defaults(func=cmd_show)
    for name, (_, help_line) in TOOLS.items():  # listed here; `main` hands them their arguments
        t = sub.add_parser(name, help=help_line, add_help=False)
        t.add_argument("args", nargs=argparse.REMAINDER)
    return p


def run_tool(name: str, argv: list[str]) -> int:
    """`ragkit NAME ARGS...` for a tool: its own parser, its own exit code. A benchmark file
    that is not there (offline, no RAGKIT_BENCHMARKS_DIR) or differs from the pinned copy, or
    a CliError, is one line on stderr and exit code 3, as for the built-in commands; anything
    else is a bug and keeps its traceback."""
    from ..config import SettingsError
    from ..evaluate.benchmarks import BenchmarkUnavailable, ChecksumError

    module = importlib.import_module(f"{__package__}.{TOOLS[name][0]}")
    try:
        return module.main(argv, prog=f"ragkit {name}")
    except (CliError, BenchmarkUnavailable, ChecksumError) as e:
        print(f"ragkit {name}: {e}", file=sys.stderr)
        return getattr(e, "code", EXIT_FATAL)
    except SettingsError as e:  # a RAGKIT_* variable changed under the tool: still one line
        print(f"ragkit {name}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"ragkit {name}: interrupted", file=sys.stderr)
        return 130


def _one_strategy(spec: str) -> list:
    out = parse_strategies(spec)
    if len(out) != 1:
        raise argparse.ArgumentTypeError(f"{spec!r}: give one strategy")
    return out


def _count(value: str) -> int:
    """chunk --limit: a whole number from 0 to `MAX_LIMIT`."""
    return whole_number(value, 0, MAX_LIMIT)


def _one_line_warnings() -> None:
    """Warnings (a corrupt cache shard, a read-only cache) as one line each, not the
    file-and-source-line form that reads like a traceback."""
    import warnings

    def show(message, category, filename, lineno, file=None, line=None):
        print(f"ragkit: warning: {message}", file=file or sys.stderr)

    warnings.showwarning = show


def main(argv: list[str] | None = None) -> int:
    from ..environment import offline_defaults

    offline_defaults()
    argv = sys.argv[1:] if argv is None else list(argv)
    problem = environment_error()
    if problem:
        print(f"ragkit: {problem}", file=sys.stderr)
        return EXIT_USAGE
    if argv and argv[0] in TOOLS:
        return run_tool(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    debug = getattr(args, "debug", False)
    if not debug:
        _one_line_warnings()
    try:
        return args.func(args)
    except CliError as e:
        if debug:
            import traceback

            traceback.print_exc()
        print(f"ragkit: {e}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print("ragkit: interrupted", file=sys.stderr)
        return 130
    except Exception:  # a bug: keep the traceback, and say so
        import traceback

        traceback.print_exc()
        print("ragkit: internal error (a bug in ragkit; the traceback above says where)",
              file=sys.stderr)
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())
