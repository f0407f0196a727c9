"""Golden evidence: the same quote twice, quotes that overlap, span offsets counted in the raw
file (front matter included), CSV fields whose quote is never closed.

Each case checks one promise: the right gold units (overlapping evidence is one unit and can be
retrieved whole), or a clear error naming the question and line, and through the real ``ragkit
golden`` command an exit code without a traceback — and no file of the reader's changed.
`unchanged` and `cli_case` are shared with the ``unicode forms`` and ``numeric limits`` areas.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Callable

from .base import Area, Context, expect, run_cli


def run(ctx: Context) -> Area:
    return golden_evidence_area(ctx.folder, quick=ctx.quick)


FRONT = "---\ntitle: Refunds\nproduct: suite\n---\n"
BODY = ("# Refunds\n\nGold tier: 14 days, fee 2%.\n\nSilver tier: 7 days, fee 5%.\n\n"
        "Bronze tier: no refunds.\n")


def unchanged(paths: list[Path]) -> Callable[[], None]:
    """A check that the files under `paths` (files or folders) are byte for byte what they
    were when `unchanged` was called, and that no file appeared among them."""
    def files() -> dict[Path, bytes]:
        out = {}
        for p in paths:
            for f in ([p] if p.is_file() else sorted(x for x in p.rglob("*") if x.is_file())):
                out[f] = f.read_bytes()
        return out

    before = files()

    def check() -> None:
        after = files()
        changed = sorted(str(f) for f in set(before) | set(after)
                         if before.get(f) != after.get(f))
        expect(not changed, f"files changed: {changed[:3]}")
    return check


def cli_case(area: Area, label: str, args: list[str], code: int, needle: str,
             inputs: list[Path], stream: str = "both") -> None:
    """One case through the real command: exit `code`, `needle` in its output, no traceback,
    the last line of stderr one clear line, and the `inputs` unchanged."""
    def check():
        same = unchanged(inputs)
        out = run_cli(args, timeout=300)
        text = {"stderr": out.stderr, "stdout": out.stdout}.get(stream, out.stdout + out.stderr)
        expect("Traceback" not in out.stderr, f"a traceback: {out.stderr[-400:]}")
        expect(out.returncode == code, f"exit {out.returncode}, expected {code}: "
               f"{(out.stderr or out.stdout)[-300:]}")
        expect(needle in text, f"{needle!r} not in the output: {text[-300:]}")
        same()
    area.case(label, check)


def _corpus(folder: Path) -> Path:
    docs = folder / "evidence-docs"
    docs.mkdir(exist_ok=True)
    (docs / "refunds.md").write_text(FRONT + BODY, encoding="utf-8")
    return docs


def _jsonl(folder: Path, name: str, records: list[dict]) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


def _q(qid: str, evidence: list[dict]) -> dict:
    return {"id": qid, "question": f"Question {qid}?", "evidence": evidence}


OK = _q("ok", [{"quote": "Bronze tier: no refunds."}])


def golden_evidence_area(folder: Path, quick: bool = False) -> Area:
    from ...evaluate.benchmarks import load_folder
    from ...evaluate.golden import GoldenWarning
    from ...evaluate.metrics import query_scores
    from ...text.corpus import load_corpus
    from ...types import Chunk

    area = Area("golden evidence")
    docs = _corpus(folder)
    raw = FRONT + BODY

    def loads(path: Path, *, warns: list[str] | None = None, kept: list[str] | None = None,
              problem: tuple[int, str, list[str]] | None = None):
        """load_folder on `path`: the ids kept, the warnings (each naming file, line and id)
        and at most one problem (line, id, words it must hold)."""
        same = unchanged([docs, path])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            bench, errors, problems = load_folder(docs, path)
        got = [str(w.message) for w in caught if issubclass(w.category, GoldenWarning)]
        expect(errors == [], f"file errors: {errors}")
        if kept is not None:
            expect([x.id for x in bench.queries] == kept,
                   f"kept {[x.id for x in bench.queries]}, expected {kept}; {problems}")
        expect(len(got) == len(warns or []) and all(
            w in g for w, g in zip(warns or [], got)), f"warnings {got}, expected {warns}")
        if problem is None:
            expect(problems == [], f"unexpected problems {problems}")
        else:
            line, qid, words = problem
            expect(len(problems) == 1 and problems[0].startswith(f"{path}:line {line} ({qid}):")
                   and all(w in problems[0] for w in words),
                   f"expected one problem on line {line} ({qid}) with {words}, got {problems}")
        same()
        return bench

    def merged(name, evidence, units, warn=True):
        def check():
            path = _jsonl(folder, name, [_q("x", evidence), OK])
            bench = loads(path, warns=[f"{path}:line 1 (x): evidence 1 and 2 overlap"]
                          if warn else [], kept=["x", "ok"])
            [q] = [x for x in bench.queries if x.id == "x"]
            expect(len(q.gold) == units, f"{len(q.gold)} gold units, expected {units}")
            doc = bench.documents[0]
            whole = [Chunk.make(doc, min(g.start for g in q.gold), max(g.end for g in q.gold),
                                "whole")]
            got = query_scores(q, whole, k=1)
            expect(got["recall"] == 1.0 and got["pass@k"] == 1.0,
                   f"evidence retrieved whole scores {got['recall']:.2f} recall, "
                   f"{got['pass@k']:.2f} pass@k")
        area.case(name.replace("-", " "), check)

    merged("the-same-quote-twice", [{"quote": "Gold tier: 14 days"}] * 2, 1)
    merged("a-quote-inside-another", [{"quote": "Gold tier: 14 days, fee 2%."},
                                      {"quote": "14 days"}], 1)
    merged("quotes-that-overlap", [{"quote": "Gold tier: 14 days"},
                                   {"quote": "14 days, fee 2%."}], 1)
    s = BODY.index("Gold tier")
    merged("a-quote-and-a-span-of-the-same-text", [
        {"quote": "Gold tier: 14"}, {"doc_id": "refunds", "start": s, "end": s + 13,
                                     "quote": "Gold tier: 14"}], 1)
    merged("quotes-that-only-touch", [{"quote": "Gold tier: "}, {"quote": "14 days, fee"}], 2,
           warn=False)

    at = raw.index("Silver tier")

    def raw_offsets():
        path = _jsonl(folder, "raw-offsets", [OK, _q("raw", [{
            "doc_id": "refunds", "start": at, "end": at + 11, "quote": "Silver tier"}])])
        loads(path, kept=["ok"], problem=(2, "raw", [
            "offsets are into the document's text as parsed", "front matter",
            f"[{at - len(FRONT)}, {at - len(FRONT) + 11})"]))
    area.case("span offsets counted in the raw file, with the quote", raw_offsets)

    def raw_offsets_past_the_text():
        end = len(raw) - 2
        path = _jsonl(folder, "raw-past", [OK, _q("raw", [{"doc_id": "refunds",
                                                             "start": end - 5, "end": end}])])
        loads(path, kept=["ok"], problem=(2, "raw", ["not inside", "front matter"]))
    area.case("span without its quote past the parsed text, inside the file",
              raw_offsets_past_the_text)

    def no_quote_warns():
        path = _jsonl(folder, "no-quote", [_q("nq", [{"doc_id": "refunds", "start": s,
                                                      "end": s + 9}])])
        bench = loads(path, kept=["nq"], warns=[f"{path}:line 1 (nq): span [{s}, {s + 9})"])
        [q] = bench.queries
        expect(bench.documents[0].text[q.gold[0].start:q.gold[0].end] == "Gold tier",
               "the span is not read as offsets into the parsed text")
    area.case("span without its quote in a document with front matter warns", no_quote_warns)

    header = "id,question,quote,doc_id\n"
    csv_cases = [
        ("csv: a quote never closed", header + 'a,A?,"Gold tier: 14 days,refunds\n'
         "b,B?,Silver tier: 7 days,refunds\nc,C?,Bronze tier,refunds\n",
         ["b", "c"], (2, "?", ["never closed", "end of the file", "lines 3-4"])),
        ("csv: a quote closed inside a later row", header + 'a,A?,"Gold tier,refunds\n'
         'b,B?,Silver tier,refunds\nc,C?,"Bronze tier",refunds\n',
         ["b", "c"], (2, "?", ["never closed where its field ends"])),
        ("csv: a quoted field over two lines is one field", header + 'a,"Gold,\nor not?",'
         "Gold tier,refunds\nb,B?,Silver tier,refunds\n", ["a", "b"], None),
    ]
    for label, text, kept, problem in csv_cases:
        def check(label=label, text=text, kept=kept, problem=problem):
            path = folder / f"{label.split(': ')[1].replace(' ', '-')}.csv"
            path.write_text(text, encoding="utf-8")
            loads(path, kept=kept, problem=problem)
        area.case(label, check)

    def sidecar_quote():
        side = folder / "sidecar-docs"
        side.mkdir(exist_ok=True)
        (side / "a.txt").write_text("Alpha.\n")
        (side / "b.txt").write_text("Beta.\n")
        (side / "metadata.csv").write_text('path,title\na.txt,"Alpha\nb.txt,Beta\n')
        same = unchanged([side])
        corpus = load_corpus(side, strict=False)
        expect(any("metadata.csv:2:" in e and "never closed" in e for e in corpus.errors),
               f"unclosed quote not reported: {corpus.errors}")
        expect(corpus.by_id()["b"].metadata.get("title") == "Beta",
               "the row after the unclosed quote was lost")
        same()
    area.case("metadata.csv: a quote never closed", sidecar_quote)

    bad_csv = folder / "cli-unclosed.csv"
    bad_csv.write_text(header + 'a,A?,"Gold tier,refunds\nb,B?,Silver tier,refunds\n',
                       encoding="utf-8")
    cli_case(area, "ragkit golden: a CSV quote never closed",
             ["golden", str(docs), str(bad_csv), str(folder / "out-unclosed.jsonl")], 1,
             f"{bad_csv}:line 2 (?): a quoted field opened on this line is never closed",
             [docs, bad_csv], stream="stdout")
    if quick:
        return area
    raw_q = _jsonl(folder, "cli-raw", [_q("raw", [{"doc_id": "refunds", "start": at,
                                                   "end": at + 11, "quote": "Silver tier"}])])
    cli_case(area, "ragkit golden: span offsets counted in the raw file",
             ["golden", str(docs), str(raw_q), str(folder / "out-raw.jsonl")], 1,
             "offsets are into the document's text as parsed", [docs, raw_q], stream="stdout")
    dup_q = _jsonl(folder, "cli-dup", [_q("twice", [{"quote": "Gold tier"}] * 2)])
    cli_case(area, "ragkit golden: the same quote twice is kept, with a warning",
             ["golden", str(docs), str(dup_q), str(folder / "out-dup.jsonl")], 0,
             f"warning: {dup_q}:line 1 (twice): evidence 1 and 2 overlap", [docs, dup_q],
             stream="stdout")
    return area
