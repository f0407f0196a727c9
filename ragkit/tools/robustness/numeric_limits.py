"""Numeric limits: integers of thousands of digits and JSON nested thousands deep in the files a
reader hands ragkit, and numbers past any sensible size on the command line.

Python refuses to convert an integer of more than 4,300 digits (a ValueError) and recurses once
per level of JSON nesting (a RecursionError); faiss aborts the process when asked for 2**31
results. Each case checks one promise: a clear error naming the file and line (or the argument),
a non-zero exit without a traceback through the real command, and no file changed.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from .base import Area, Context, expect
from .golden_evidence import cli_case, unchanged


def run(ctx: Context) -> Area:
    return numeric_limits_area(ctx.folder, quick=ctx.quick)


HUGE = "9" * 5000  # past Python's 4,300-digit int-conversion limit
DEEP = "[" * 50_000 + "]" * 50_000  # past Python's recursion limit


def numeric_limits_area(folder: Path, quick: bool = False) -> Area:
    from ...cache import CacheWarning, JsonlCache
    from ...evaluate.golden import check_questions
    from ...report.results import ResultsFileError, read_rows
    from ...scale.shards import ShardError, ShardSet
    from ...types import Document

    area = Area("numeric limits")
    docs = {"d": Document("d", "Gold tier: 14 days. Silver tier: 7 days.")}
    ok = json.dumps({"id": "ok", "question": "?", "evidence": [{"quote": "Gold tier"}]})
    bad_lines = {
        "a 5,000-digit id": '{"id": %s, "question": "?", "evidence": []}' % HUGE,
        "a 5,000-digit offset": '{"id": "x", "question": "?", "evidence": [{"doc_id": "d", '
                                '"start": 0, "end": %s}]}' % HUGE,
        "context nested 50,000 deep": '{"id": "x", "question": "?", "context": %s}' % DEEP,
        "a line that is only nesting": DEEP,
    }
    for label, line in bad_lines.items():
        def golden(label=label, line=line):
            path = folder / f"golden-{label.split()[1].strip(',')}.jsonl"
            path.write_text(ok + "\n" + line + "\n", encoding="utf-8")
            same = unchanged([path])
            records, problems = check_questions(path, docs)
            expect([r["id"] for r in records] == ["ok"], f"kept {[r['id'] for r in records]}")
            expect(len(problems) == 1 and problems[0].line == 2 and "JSON past what ragkit "
                   "reads" in problems[0].message, f"problems: {[str(p) for p in problems]}")
            same()
        area.case(f"golden file: {label}", golden)

    for label, line in (("a 5,000-digit number", '{"k": %s}' % HUGE), ("nesting", DEEP)):
        def results(label=label, line=line):
            path = folder / f"rows-{label.split()[0]}.jsonl"
            path.write_text('{"a": 1}\n' + line + "\n", encoding="utf-8")
            same = unchanged([path])
            try:
                read_rows(path)
            except ResultsFileError as e:
                expect(str(e).startswith(f"{path}:2: "), f"unclear error: {e}")
            else:
                raise AssertionError("no error")
            same()
        area.case(f"results file: {label}", results)

    def cache_line():
        path = folder / "cache.jsonl"
        path.write_text(DEEP + "\n", encoding="utf-8")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            data = JsonlCache(path).load()
        expect(data == {} and any(issubclass(w.category, CacheWarning) and ":1:" in
                                  str(w.message) for w in caught), "not a corrupt cache line")
    area.case("JSONL cache: a line nested 50,000 deep is a corrupt line", cache_line)

    def manifest():
        shards = folder / "shards"
        shards.mkdir(exist_ok=True)
        (shards / "manifest.json").write_text('{"format": %s}' % HUGE, encoding="utf-8")
        try:
            ShardSet(shards)
        except ShardError as e:
            expect("unreadable manifest" in str(e), f"unclear error: {e}")
        else:
            raise AssertionError("no error")
    area.case("shard manifest: a 5,000-digit number", manifest)

    corpus = folder / "docs"
    corpus.mkdir(exist_ok=True)
    (corpus / "d.md").write_text("# D\n\nGold tier: 14 days.\n", encoding="utf-8")
    questions = folder / "q.jsonl"
    questions.write_text(ok + "\n", encoding="utf-8")
    inputs = [corpus, questions]
    base = ["eval", "--corpus", str(corpus), "--golden", str(questions)]
    for label, row in (("a 5,000-digit number", '{"k": %s}' % HUGE), ("nesting", DEEP)):
        rows = folder / f"cli-rows-{label.split()[0]}.jsonl"
        rows.write_text(row + "\n", encoding="utf-8")
        cli_case(area, f"eval --results holding {label}", [*base, "--results", str(rows)], 3,
                 f"{rows}:1:", [*inputs, rows], stream="stderr")
    out_rows = str(folder / "never.jsonl")
    arguments = [
        ("eval --k 2147483648", [*base, "--k", "2147483648"], "--k: must be at most"),
        ("eval --k of 5,000 digits", [*base, "--k", HUGE], "--k: must be at most"),
        ("eval --strategies recursive:2147483648/0",
         [*base, "--strategies", "recursive:2147483648/0"], "SIZE must be at most"),
        ("eval --strategies fixed_chars:100/<20 digits>",
         [*base, "--strategies", "fixed_chars:100/" + "9" * 20], "OVERLAP < SIZE"),
        ("show --k 2147483648", ["show", "--corpus", str(corpus), "--golden", str(questions),
                                 "--question", "ok", "--k", "2147483648"],
         "--k: must be at most"),
        ("chunk --limit 10**20", ["chunk", str(corpus), "--limit", "1" + "0" * 20],
         "--limit: must be at most"),
        ("index --num-proc 2147483648", ["index", str(corpus), "--out", str(folder / "ix"),
                                         "--num-proc", "2147483648"], "--num-proc"),
        ("index --shard-docs 0", ["index", str(corpus), "--out", str(folder / "ix"),
                                  "--shard-docs", "0"], "--shard-docs"),
        ("preambles --budget -1", ["preambles", "--benchmark", "course", "--generator",
                                   "structural", "--budget", "-1"], "--budget"),
        ("bench design --benchmarks nowhere",
         ["bench", "design", "--benchmarks", "nowhere"], "unknown benchmark"),
        ("bench context-speed --chunks of 30 digits",
         ["bench", "context-speed", "--chunks", "9" * 30], "--chunks"),
        ("bench late --repeats 0", ["bench", "late", "--repeats", "0"], "--repeats"),
        ("bench filter-speed --n 10**12", ["bench", "filter-speed", "--n", "1" + "0" * 12],
         "--n: must be at most"),
        ("reproduce --timeout 0", ["reproduce", "--timeout", "0"], "--timeout"),
    ]
    for label, args, needle in (arguments[:3] if quick else arguments):
        if args[0] == "eval":
            args = [*args, "--results", out_rows]
        cli_case(area, label, args, 2, needle, [*inputs, folder / "ix"], stream="stderr")

    def nothing_written():
        expect(not Path(out_rows).exists() and not (folder / "ix").exists(),
               "a refused command wrote its output")
    area.case("refused commands write nothing", nothing_written)
    return area
