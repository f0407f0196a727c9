"""Golden sets anchored to character spans: author them with quotes, store them with offsets.

Authors write each question's evidence as a verbatim quote (``questions.jsonl``); `locate`
finds the quote in its document — exactly first, then ignoring differences in whitespace — and
`build_golden` writes ``golden.jsonl`` with ``(doc_id, start, end)`` spans. A quote that is
missing or occurs more than once is never guessed: it is reported with its line in the questions
file and the closest candidates. `validate_golden` re-checks every stored span against the text.

    >>> locate("Gold  tier:\\n14 days", "Gold tier: 14 days")
    [(0, 19)]
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .types import Document, Query, Span

QUESTION_TYPES = ("lookup", "aggregation", "comparison", "inference", "ambiguous", "refusal")


class GoldenError(ValueError):
    """The golden set is inconsistent with the documents; the message names file and line."""


def locate(text: str, quote: str) -> list[tuple[int, int]]:
    """Every span of `text` matching `quote`: exact matches, else whitespace-insensitive ones."""
    quote = quote.strip()
    if not quote:
        return []
    hits, pos = [], text.find(quote)
    while pos != -1:
        hits.append((pos, pos + len(quote)))
        pos = text.find(quote, pos + 1)
    if hits:
        return hits
    pattern = r"\s+".join(re.escape(w) for w in quote.split())
    return [(m.start(), m.end()) for m in re.finditer(pattern, text)]


def closest(text: str, quote: str, n: int = 2) -> list[str]:
    """Sentences of `text` most similar to `quote` (for error messages)."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]
    return difflib.get_close_matches(quote.strip(), sentences, n=n, cutoff=0.3)


@dataclass
class Problem:
    line: int
    question_id: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line} ({self.question_id}): {self.message}"


def resolve_evidence(record: Mapping[str, Any], docs: Mapping[str, Document], line: int
                     ) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Spans for one question's quotes; problems for quotes that are missing or ambiguous."""
    qid = str(record.get("id", f"line{line}"))
    spans, problems = [], []
    for ev in record.get("evidence", []):
        quote = ev.get("quote", "")
        candidates = [docs[ev["doc_id"]]] if ev.get("doc_id") else list(docs.values())
        if ev.get("doc_id") and ev["doc_id"] not in docs:
            problems.append(Problem(line, qid, f"unknown document {ev['doc_id']!r}"))
            continue
        found = [(d.id, s, e) for d in candidates for s, e in locate(d.text, quote)]
        if len(found) == 1:
            d, s, e = found[0]
            spans.append({"doc_id": d, "start": s, "end": e, "quote": docs[d].text[s:e]})
        elif not found:
            near = [c for d in candidates for c in closest(d.text, quote, 1)][:2]
            problems.append(Problem(line, qid, f"quote not found: {quote[:60]!r}; closest: "
                                    f"{near}"))
        else:
            where = ", ".join(f"{d}@{s}" for d, s, _ in found[:5])
            problems.append(Problem(line, qid, f"quote occurs {len(found)} times ({where}); "
                                    "quote more text so it is unique"))
    return spans, problems


def read_records(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) for a JSONL or CSV questions file."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        import csv

        with path.open(newline="", encoding="utf-8") as f:
            out = []
            for n, row in enumerate(csv.DictReader(f), start=2):
                ev = [{"doc_id": row.get("doc_id") or None, "quote": row["quote"]}] \
                    if row.get("quote") else []
                out.append((n, {**row, "evidence": ev}))
            return out
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append((n, json.loads(line)))
            except json.JSONDecodeError as e:
                raise GoldenError(f"{path}:{n}: not valid JSON ({e.msg})") from None
    return out


def build_golden(questions: str | Path, docs: Mapping[str, Document], out: str | Path | None
                 = None) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Resolve every quote to a span; write the span-anchored records to `out` if given."""
    records, problems = [], []
    for n, rec in read_records(questions):
        spans, probs = resolve_evidence(rec, docs, n)
        problems.extend(probs)
        if probs:
            continue
        records.append({"id": str(rec.get("id", f"q{n}")), "question": rec["question"],
                        "type": rec.get("type", "lookup"), "answer": rec.get("answer", ""),
                        "evidence": spans, "context": rec.get("context") or {},
                        **({"synthetic": True} if rec.get("synthetic") else {})})
    if out is not None:
        from .cache import atomic_write_text

        atomic_write_text(out, "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                       for r in records))
    return records, problems


def validate_golden(path: str | Path, docs: Mapping[str, Document]) -> list[str]:
    """Every problem in a span-anchored golden file (empty list = valid)."""
    errors, seen = [], set()
    for n, rec in read_records(path):
        where = f"{path}:{n}"
        qid = rec.get("id")
        if not qid or qid in seen:
            errors.append(f"{where}: missing or duplicate id {qid!r}")
        seen.add(qid)
        if rec.get("type") not in QUESTION_TYPES:
            errors.append(f"{where}: type {rec.get('type')!r} not in {QUESTION_TYPES}")
        if not str(rec.get("question", "")).strip():
            errors.append(f"{where}: empty question")
        ev = rec.get("evidence", [])
        if (rec.get("type") == "refusal") != (not ev):
            errors.append(f"{where}: refusals, and only refusals, have no evidence")
        for e in ev:
            doc = docs.get(e.get("doc_id"))
            if doc is None:
                errors.append(f"{where}: unknown document {e.get('doc_id')!r}")
                continue
            s, t = e.get("start"), e.get("end")
            if not (isinstance(s, int) and isinstance(t, int) and 0 <= s < t <= len(doc.text)):
                errors.append(f"{where}: bad span [{s}, {t}) in {doc.id}")
            elif doc.text[s:t] != e.get("quote"):
                errors.append(f"{where}: span [{s}, {t}) of {doc.id} is not the quoted text")
        for key in (rec.get("context") or {}):
            if key not in ("region", "product", "as_of", "doc_type"):
                errors.append(f"{where}: unknown context key {key!r}")
    return errors


def read_golden(path: str | Path, docs: Mapping[str, Document]) -> list[Query]:
    """Queries from a span-anchored golden file; raises `GoldenError` if it does not validate."""
    errors = validate_golden(path, docs)
    if errors:
        raise GoldenError(f"{len(errors)} problem(s):\n" + "\n".join(errors[:20]))
    out = []
    for _, rec in read_records(path):
        gold = tuple(Span(e["doc_id"], e["start"], e["end"]) for e in rec["evidence"])
        out.append(Query(id=rec["id"], text=rec["question"], gold=gold, type=rec["type"],
                         answer=rec.get("answer", ""), context=rec.get("context") or {},
                         metadata={"synthetic": bool(rec.get("synthetic"))}))
    return out


def main(argv: list[str] | None = None) -> int:
    """python -m ragkit.golden CORPUS_DIR QUESTIONS OUT — build span-anchored gold."""
    import argparse

    from .documents import load_corpus

    p = argparse.ArgumentParser(prog="python -m ragkit.golden", description=main.__doc__)
    p.add_argument("corpus")
    p.add_argument("questions")
    p.add_argument("out")
    a = p.parse_args(argv)
    docs = load_corpus(a.corpus).by_id()
    records, problems = build_golden(a.questions, docs, a.out)
    for prob in problems:
        print(f"{a.questions}:{prob}")
    print(f"{len(records)} questions written to {a.out}; {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
