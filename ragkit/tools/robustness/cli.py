"""The command line, through real subprocesses: exit codes, messages, no traceback."""

from __future__ import annotations

from pathlib import Path

from .base import Area, Context, expect, run_cli
from .golden import GOOD_QUESTIONS, corpus_with_questions, write_questions


def run(ctx: Context) -> Area:
    return cli_area(ctx.folder, quick=ctx.quick)


def _cli_corpus(folder: Path) -> tuple[Path, Path]:
    docs, q = corpus_with_questions(folder, "cli-docs", "cli-questions")
    (docs / "broken.md").write_bytes(b"---\neffective_date: 2024-02-30\n---\nx\n")
    return docs, q


def cli_area(folder: Path, quick: bool = False) -> Area:
    import json as _json

    area = Area("CLI")
    docs, q = _cli_corpus(folder)
    results = folder / "cli-rows.jsonl"

    def run(label, args, code, needle="", env=None, stream="stderr"):
        def check():
            out = run_cli(args, env)
            text = out.stderr if stream == "stderr" else out.stdout
            expect("Traceback" not in out.stderr, f"a traceback: {out.stderr[-400:]}")
            expect(out.returncode == code, f"exit {out.returncode}, expected {code}: "
                    f"{out.stderr[-300:]}")
            expect(needle in text, f"{needle!r} not in {stream}: {text[-300:]}")
        area.case(label, check)

    base = ["eval", "--corpus", str(docs), "--golden", str(q), "--results", str(results)]
    usage = [
        ("--k 0", ["--k", "0"], "--k"), ("--k -3", ["--k", "-3"], "--k"),
        ("--k abc", ["--k", "abc"], "--k"),
        ("--strategies ,", ["--strategies", ","], "names no strategy"),
        ("--strategies nope", ["--strategies", "nope"], "unknown chunker"),
        ("--strategies recursive:abc", ["--strategies", "recursive:abc"], "SIZE"),
        ("--strategies recursive:10/20", ["--strategies", "recursive:10/20"], "OVERLAP < SIZE"),
        ("--strategies structure:100", ["--strategies", "structure:100"], "takes no SIZE"),
        ("--embedder /nonexistent", ["--embedder", "/nonexistent/model"], "no such folder"),
    ]
    for label, extra, needle in (usage[:3] + usage[-1:] if quick else usage):
        run(f"eval {label}", base + extra, 2, needle)
    run("chunk a bad file", ["chunk", str(docs / "broken.md")], 3, "not a valid date")
    run("eval with a missing golden file", ["eval", "--corpus", str(docs), "--golden",
                                            str(folder / "none.jsonl")], 3, "no such file")
    arr = folder / "array.jsonl"
    arr.write_text('[{"id": "a"}]\n')
    run("eval with a JSON array golden file", ["eval", "--corpus", str(docs), "--golden",
                                               str(arr)], 3, "JSON array")
    corrupt = folder / "corrupt-rows.jsonl"
    corrupt.write_text('{"ok": 1}\n{broken\n')
    run("eval with a corrupt results file", ["eval", "--corpus", str(docs), "--golden", str(q),
                                             "--results", str(corrupt)], 3, ":2:")
    empty = folder / "empty.jsonl"
    empty.write_text("\n\n")
    all_bad = write_questions(folder, "cli-all-bad", [
        {"id": "a", "question": "?", "evidence": [{"quote": "Platinum"}]},
        {"id": "a", "question": "?", "evidence": "Gold"}], "jsonl")
    nodocs = folder / "cli-nodocs"
    nodocs.mkdir(exist_ok=True)
    (nodocs / "x.md").write_bytes(b"\x00" * 10)
    fast = [
        ("chunk --limit -1", ["chunk", str(docs / "refunds.md"), "--limit", "-1"], 2, "--limit"),
        ("chunk --strategy nope", ["chunk", str(docs), "--strategy", "nope"], 2,
         "unknown chunker"),
        ("chunk --strategy two", ["chunk", str(docs), "--strategy", "recursive,structure"], 2,
         "give one strategy"),
        ("chunk a missing path", ["chunk", str(folder / "missing.md")], 3, "no such file"),
        ("show --k 0", ["show", "--corpus", str(docs), "--golden", str(q), "--question", "g1",
                        "--k", "0"], 2, "--k"),
        ("show an unknown question", ["show", "--corpus", str(docs), "--golden", str(q),
                                      "--question", "zz"], 3, "not found"),
        ("show a skipped question", ["show", "--corpus", str(docs), "--golden", str(all_bad),
                                     "--question", "a"], 3, "was skipped"),
        ("eval with an empty golden file", ["eval", "--corpus", str(docs), "--golden",
                                            str(empty)], 3, "no question"),
        ("eval where every question is bad", ["eval", "--corpus", str(docs), "--golden",
                                              str(all_bad)], 3, "duplicate id"),
        ("eval on a folder of unreadable files", ["eval", "--corpus", str(nodocs), "--golden",
                                                  str(q)], 3, "no readable documents"),
        ("eval --corpus a file", ["eval", "--corpus", str(docs / "refunds.md"), "--golden",
                                  str(q)], 3, "no such folder"),
        ("unknown command", ["frobnicate"], 2, "invalid choice"),
        ("no command", [], 2, "required"),
    ]
    for label, args, code, needle in (fast[:4] if quick else fast):
        run(label, args, code, needle)
    if quick:
        return area
    dup = write_questions(folder, "cli-dup", [*GOOD_QUESTIONS[:2], {
        "id": "g1", "question": "Again?", "evidence": [{"quote": "Bronze tier: no refunds."}]}],
        "jsonl")
    blocked = folder / "cache-is-a-file"
    blocked.write_text("x")

    def dup_and_readonly():
        out = run_cli(["eval", "--corpus", str(docs), "--golden", str(dup), "--strategies",
                    "recursive:40/0", "--k", "2", "--results", str(results)],
                   {"RAGKIT_CACHE_DIR": str(blocked / "cache")})
        expect("Traceback" not in out.stderr, f"a traceback: {out.stderr[-400:]}")
        expect(out.returncode == 1, f"exit {out.returncode}: {out.stderr[-300:]}")
        expect("duplicate id 'g1'" in out.stderr and "line 1" in out.stderr,
                f"duplicate not reported: {out.stderr[-300:]}")
        expect("cannot be written" in out.stderr, "read-only cache not reported")
        expect("not a valid date" in out.stderr, "bad file not reported")
        rows = [_json.loads(x) for x in results.read_text().split("\n") if x.strip()]
        expect(rows and {r["n_queries"] for r in rows} == {2}, "rows not written")
    area.case("eval: duplicate id, read-only cache, a bad file -> exit 1", dup_and_readonly)
    return area
