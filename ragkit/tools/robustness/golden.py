"""Golden files: malformed variants of questions, in JSONL and CSV, with and without a byte-order
mark and CRLF line ends, and files unusable as a whole."""

from __future__ import annotations

from pathlib import Path

from ...types import Document
from .base import Area, Context, expect


def run(ctx: Context) -> Area:
    return golden_area(ctx.folder)


GOLDEN_TEXT = ("# Refunds\n\nGold tier: 14 days, fee 2%.\n\nSilver tier: 7 days, fee 5%.\n\n"
               "Bronze tier: no refunds.\n")


def _golden_docs() -> dict[str, Document]:
    t2 = "Support hours: 9 to 5 on weekdays.\u2028Weekend support: none.\n"
    return {"refunds": Document("refunds", GOLDEN_TEXT), "support": Document("support", t2)}


def _span(doc: str, quote: str) -> dict:
    text = _golden_docs()[doc].text
    s = text.index(quote)
    return {"doc_id": doc, "start": s, "end": s + len(quote), "quote": quote}


GOOD_QUESTIONS = [
    {"id": "g1", "question": "Gold window?", "evidence": [{"doc_id": "refunds",
                                                          "quote": "Gold tier: 14 days"}]},
    {"id": "g2", "question": "Silver fee?",
     "evidence": [{"quote": "Silver tier: 7 days, fee 5%."}]},
    {"id": "g3", "question": "Weekend?", "evidence": [{"quote": "Weekend support: none."}]},
]


def golden_variants() -> list[tuple[str, list, int, str]]:
    """(name, records, good questions expected, text of the expected problem).

    A record is a dict (written as JSON / a CSV row) or a str (written as is: a bad line)."""
    ok = GOOD_QUESTIONS
    q = lambda i, ev, **kw: {"id": i, "question": f"Question {i}?", "evidence": ev, **kw}  # noqa
    gold = [{"doc_id": "refunds", "quote": "Gold tier: 14 days"}]
    return [
        ("clean", ok, 3, ""),
        ("duplicate id", [*ok, q("g1", gold)], 3, "duplicate id 'g1'"),
        ("ids 1 and '1'", [q(1, gold), *ok, q("1", [{"quote": "Bronze tier: no refunds."}])], 4,
         "duplicate id '1'"),
        ("unknown doc_id (quote)", [*ok, q("x", [{"doc_id": "nope", "quote": "Gold"}])], 3,
         "unknown document 'nope'"),
        ("quote not found", [*ok, q("x", [{"quote": "Platinum tier"}])], 3, "not found"),
        ("quote twice", [*ok, q("x", [{"quote": "tier:"}])], 3, "times"),
        ("no evidence", [*ok, q("x", [])], 3, "no evidence"),
        ("refusal without evidence", [*ok, q("x", [], type="refusal")], 4, ""),
        ("refusal with evidence", [*ok, q("x", gold, type="refusal")], 3, "refusal"),
        ("no question text", [*ok, {"id": "x", "evidence": gold}], 3, "no question text"),
        ("unknown type", [*ok, q("x", gold, type="factoid")], 3, "type 'factoid'"),
        ("span ok", [*ok, q("x", [_span("refunds", "Bronze tier")])], 4, ""),
        ("span ok, no quote", [*ok, q("x", [{k: v for k, v in _span("refunds", "Bronze").items()
                                             if k != "quote"}])], 4, ""),
        ("span not its quote", [*ok, q("x", [{**_span("refunds", "Bronze"), "start": 3}])], 3,
         "not the quote"),
        ("span past the end", [*ok, q("x", [{"doc_id": "refunds", "start": 10, "end": 10_000}])],
         3, "not inside"),
        ("span end < start", [*ok, q("x", [{"doc_id": "refunds", "start": 20, "end": 5}])], 3,
         "not inside"),
        ("span string offsets", [*ok, q("x", [{"doc_id": "refunds", "start": "1", "end": "9"}])],
         3, "integer"),
        ("span float offsets", [*ok, q("x", [{"doc_id": "refunds", "start": 1.0, "end": 9.5}])],
         3, "integer"),
        ("span words as offsets", [*ok, q("x", [{"doc_id": "refunds", "start": "one",
                                                 "end": "9"}])], 3, "integer"),
        ("span negative offsets", [*ok, q("x", [{"doc_id": "refunds", "start": -4, "end": 9}])],
         3, "not inside"),
        ("span unknown doc", [*ok, q("x", [{"doc_id": "nope", "start": 1, "end": 5}])], 3,
         "unknown document"),
        ("span without doc_id", [*ok, q("x", [{"start": 1, "end": 5}])], 3, "needs its doc_id"),
        ("quote with U+2028", [*ok, q("x", [{"quote": "weekdays.\u2028Weekend"}])], 4, ""),
        ("quote with U+0085", [*ok, q("x", [{"quote": "Bronze tier: no refunds."}],
                                      answer="no\u0085refunds")], 4, ""),
        ("evidence a string", [*ok, q("x", "Gold tier")], 3, "evidence must be a list"),
        ("evidence items strings", [*ok, q("x", ["Gold tier"])], 3, "must be an object"),
        ("bad JSON line", [*ok, '{"id": "x", "question": '], 3, "not valid JSON"),
        ("a JSON array line", [*ok, "[1, 2]"], 3, "expected a JSON object"),
        ("context not an object", [*ok, q("x", gold, context="EU")], 3, "context"),
    ]


# variants a CSV file cannot express (a CSV offset "1" is the number 1)
JSONL_ONLY = {"evidence a string", "evidence items strings", "bad JSON line",
              "a JSON array line", "span without doc_id", "context not an object",
              "no question text", "span float offsets", "span string offsets",
              "span negative offsets"}
FORMATS = ("jsonl", "jsonl+bom", "jsonl+crlf", "csv", "csv+bom", "csv+crlf")


def write_questions(folder: Path, name: str, records: list, fmt: str) -> Path:
    """Write records as JSONL or CSV (id,question,quote,doc_id,start,end,type), with a BOM
    or CRLF line endings when `fmt` says so."""
    import csv
    import io
    import json as _json

    nl = "\r\n" if fmt.endswith("crlf") else "\n"
    if fmt.startswith("jsonl"):
        body = nl.join(r if isinstance(r, str) else _json.dumps(r, ensure_ascii=False)
                       for r in records) + nl
        path = folder / f"{name}.jsonl"
    else:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator=nl)
        w.writerow(["id", "question", "quote", "doc_id", "start", "end", "type", "answer"])
        for r in records:
            for ev in (r.get("evidence") or [{}]):
                w.writerow([r.get("id", ""), r.get("question", ""), ev.get("quote", ""),
                            ev.get("doc_id", ""), ev.get("start", ""), ev.get("end", ""),
                            r.get("type", ""), r.get("answer", "")])
        body = buf.getvalue()
        path = folder / f"{name}.csv"
    data = body.encode("utf-8")
    path.write_bytes((b"\xef\xbb\xbf" if fmt.endswith("bom") else b"") + data)
    return path


def whole_file_variants() -> list[tuple[str, str, bytes, str]]:
    """(name, suffix, bytes, text of the expected GoldenError) for files unusable as a whole."""
    return [
        ("json array", ".jsonl", b'[{"id": "a", "question": "q"}]\n', "JSON array"),
        ("pretty json array", ".jsonl", b'[\n  {"id": "a"}\n]\n', "JSON array"),
        ("latin-1 csv", ".csv", "id,question,quote\na,caf\xe9?,Gold\n".encode("latin-1"),
         "not valid UTF-8"),
        ("latin-1 jsonl", ".jsonl", '{"id": "caf\xe9"}\n'.encode("latin-1"), "not valid UTF-8"),
        ("utf-16 no bom", ".jsonl", '{"id": "a"}\n'.encode("utf-16-le"), "UTF-16"),
        ("csv without question column", ".csv", b"id,quote\na,Gold\n", "no 'question' column"),
        ("binary", ".csv", b"\x00\x01\x02" * 50, "binary"),
    ]


def golden_area(folder: Path) -> Area:
    from ...evaluate.golden import build_golden, check_questions, read_golden
    from ...evaluate.questions import GoldenError

    area = Area("golden files")
    docs = _golden_docs()
    for name, records, want, problem in golden_variants():
        for fmt in FORMATS:
            if fmt.startswith("csv") and (name in JSONL_ONLY
                                          or any(len(r.get("evidence") or []) > 1
                                                 for r in records if isinstance(r, dict))):
                continue

            def check(name=name, records=records, want=want, problem=problem, fmt=fmt):
                path = write_questions(folder, f"{name.replace(' ', '_')}-{fmt}".replace(
                    "'", ""), records, fmt)
                got, probs = check_questions(path, docs)
                expect(len(got) == want, f"{len(got)} questions kept, expected {want}; "
                        f"problems: {[str(p) for p in probs]}")
                if problem:
                    expect(len(probs) == 1 and problem in probs[0].message,
                            f"expected one problem with {problem!r}, got "
                            f"{[str(p) for p in probs]}")
                    expect(probs[0].line > 1, f"problem has no line: {probs[0]}")
                else:
                    expect(not probs, f"unexpected problems {[str(p) for p in probs]}")
                ids = [r["id"] for r in got]
                expect(len(set(ids)) == len(ids), f"duplicate ids kept: {ids}")
                for r in got:
                    for e in r["evidence"]:
                        expect(docs[e["doc_id"]].text[e["start"]:e["end"]] == e["quote"],
                                "a kept span is not its quote")
                # what ragkit writes, it reads back (U+2028 and friends included)
                out = path.with_suffix(".golden.jsonl")
                build_golden(path, docs, out)
                back = read_golden(out, docs)
                expect([q.id for q in back] == ids, "written golden file does not read back")
            area.case(f"{name} [{fmt}]", check)
    for name, suffix, data, want in whole_file_variants():
        def check(name=name, suffix=suffix, data=data, want=want):
            path = folder / f"whole-{name.replace(' ', '_')}{suffix}"
            path.write_bytes(data)
            try:
                check_questions(path, docs)
            except GoldenError as e:
                expect(want in str(e) and str(e).startswith(f"{path}:"),
                        f"unclear error: {e}")
                return
            raise AssertionError("no error for an unusable file")
        area.case(f"whole file: {name}", check)
    return area


def corpus_with_questions(root: Path, docs: str = "docs", questions: str = "questions"
                          ) -> tuple[Path, Path]:
    """A corpus folder holding one document (`GOLDEN_TEXT`) and a JSONL questions file whose
    quotes it holds (the first two `GOOD_QUESTIONS`): what the CLI cases run on."""
    folder = root / docs
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "refunds.md").write_text(GOLDEN_TEXT, encoding="utf-8")
    return folder, write_questions(root, questions, GOOD_QUESTIONS[:2], "jsonl")
