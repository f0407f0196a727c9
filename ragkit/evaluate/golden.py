"""Golden sets anchored to character spans: author them with quotes, store them with offsets.

Authors write each question's evidence as a verbatim quote (``questions.jsonl``); `locate`
finds the quote in its document — exactly first, then ignoring differences in whitespace — and
`build_golden` writes ``golden.jsonl`` with ``(doc_id, start, end)`` spans. A quote that is
missing or occurs more than once is never guessed: it is reported with its line in the questions
file and the closest candidates. `validate_golden` re-checks every stored span against the text.

Evidence given as a span (``doc_id``, ``start``, ``end``, optionally its quote) counts
characters of the document's text *as parsed*: after its YAML front matter, and for HTML in the
Markdown it becomes — never of the file as it lies on disk. With its quote, the text at the
offsets must be the quote; without one, the span must lie inside the text, and in a document
whose text is not its file (front matter, HTML) a `GoldenWarning` says the offsets could not
be checked. A span that fails is an error naming its question and line; when the same offsets
in the file itself hold the quote (or reach past the parsed text but not past the file), the
error says that offsets exclude the front matter and gives the span to write instead.

Unicode: quotes, question ids and doc ids are compared in NFC, so "é" typed as one character or
as "e" and a combining accent is one string (two ids that differ only so are a duplicate).
Documents keep their text exactly as read — every offset, every chunk's ``source[start:end]``
— and `locate` finds an NFC quote in a document written in NFD by searching an NFC copy of the
text whose offsets map back to the original characters. (Normalising the text itself at load
would shorten an NFD document, so spans a reader wrote against the file, cached embeddings
keyed by the text's hash and the offsets of every saved run would all point elsewhere.)

A question whose evidence repeats or overlaps (the same quote twice, two quotes sharing
characters) is kept with a `GoldenWarning`; `types.Query` merges such spans into one gold unit,
so they are scored once.

    >>> locate("Gold  tier:\\n14 days", "Gold tier: 14 days")
    [(0, 19)]
"""

from __future__ import annotations

import difflib
import json
import re
import unicodedata
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from .. import jsonio
from ..types import Document, Query, Span, merge_gold

QUESTION_TYPES = ("lookup", "aggregation", "comparison", "inference", "ambiguous", "refusal")


class GoldenError(ValueError):
    """The golden set is inconsistent with the documents; the message names file and line."""


class GoldenWarning(UserWarning):
    """Evidence kept, but not as written (merged, or unchecked); the message names file, line
    and question."""


def nfc(value: str) -> str:
    """`value` in Unicode normal form C (one code point for "é", not "e" + U+0301)."""
    return unicodedata.normalize("NFC", value)


def _find(text: str, quote: str) -> list[tuple[int, int]]:
    hits, pos = [], text.find(quote)
    while pos != -1:
        hits.append((pos, pos + len(quote)))
        pos = text.find(quote, pos + 1)
    if hits:
        return hits
    pattern = r"\s+".join(re.escape(w) for w in quote.split())
    return [(m.start(), m.end()) for m in re.finditer(pattern, text)]


@lru_cache(maxsize=8)
def _nfc_view(text: str) -> tuple[str, tuple[int | None, ...]] | None:
    """(NFC copy of `text`, offset in `text` of each boundary of the copy that is a boundary
    of a character sequence normalised on its own, else None). None when the copy cannot be
    built piece by piece (then a quote is only looked up as written)."""
    pieces, starts = [], []  # a piece: a character and the combining marks after it
    for i, ch in enumerate(text):
        if i == 0 or unicodedata.combining(ch) == 0:
            starts.append(i)
    starts.append(len(text))
    where: list[int | None] = []
    for a, b in zip(starts, starts[1:]):
        piece = nfc(text[a:b])
        pieces.append(piece)
        where.extend([a] + [None] * (len(piece) - 1))
    where.append(len(text))
    view = "".join(pieces)
    return (view, tuple(where)) if view == nfc(text) else None


def locate(text: str, quote: str) -> list[tuple[int, int]]:
    """Every span of `text` matching `quote`: exact matches, else whitespace-insensitive ones;
    both compared in NFC, the spans always offsets into `text` as it is."""
    quote = nfc(quote).strip()
    if not quote:
        return []
    if unicodedata.is_normalized("NFC", text):
        return _find(text, quote)
    got = _nfc_view(text)
    if got is None:
        return _find(text, quote)
    view, where = got
    return [(where[s], where[e]) for s, e in _find(view, quote)
            if where[s] is not None and where[e] is not None]


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


def read_text(path: str | Path) -> str:
    """A golden file's text: UTF-8 (with or without a byte-order mark, as Excel's "CSV UTF-8"
    writes it), or UTF-16/32 with a byte-order mark; raises `GoldenError` naming file and line
    for anything else (a Latin-1 CSV, a binary file, a file that cannot be read)."""
    from ..text.documents import DocumentError, decode_text

    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise GoldenError(f"{path}:1: cannot be read ({e.strerror or e})") from None
    try:
        return decode_text(data, str(path))
    except DocumentError as e:
        raise GoldenError(str(e)) from None


def _csv_records(path: Path, text: str) -> tuple[list[tuple[int, Any]], list[Problem]]:
    import csv

    from ..text.documents import CsvQuoteError, csv_table

    header, rows = csv_table(text)
    if isinstance(header, csv.Error):
        raise GoldenError(f"{path}:1: not a readable CSV file ({header})")
    if not header or not any(h.strip() for h in header):
        return [], []
    header = [h.strip() for h in header]
    if "question" not in header:
        raise GoldenError(f"{path}:1: the header has no 'question' column (got {header}); "
                          "expected columns id,question,quote,doc_id")
    dup = sorted({h for h in header if header.count(h) > 1})
    if dup:
        raise GoldenError(f"{path}:1: the header repeats column(s) {dup}")
    out, problems = [], []
    for n, row in rows:
        if isinstance(row, CsvQuoteError):
            problems.append(Problem(n, "?", str(row)))
            continue
        if isinstance(row, csv.Error):
            problems.append(Problem(n, "?", f"not a readable CSV row ({row}); the rest of the "
                                    "file is skipped"))
            break
        if len(row) != len(header):
            qid = row[header.index("id")] if "id" in header and header.index("id") < len(row) \
                else "?"
            problems.append(Problem(n, qid or "?", f"row has {len(row)} field(s), but the "
                                    f"header has {len(header)} ({','.join(header)})"))
            continue
        rec: dict[str, Any] = dict(zip(header, row))
        quote = rec.pop("quote", "") or ""
        doc_id = (rec.pop("doc_id", "") or "").strip() or None
        start, end = rec.pop("start", ""), rec.pop("end", "")
        ev: dict[str, Any] = {"doc_id": doc_id}
        if quote.strip():
            ev["quote"] = quote
        if str(start).strip() or str(end).strip():  # spans in a CSV: digits only
            ev["start"] = int(start) if str(start).strip().isdigit() else start
            ev["end"] = int(end) if str(end).strip().isdigit() else end
        rec["evidence"] = [ev] if len(ev) > 1 else []
        if not (rec.get("id") or "").strip():
            rec.pop("id", None)
        if not (rec.get("type") or "").strip():
            rec.pop("type", None)
        out.append((n, rec))
    return out, problems


def parse_records(path: str | Path) -> tuple[list[tuple[int, Any]], list[Problem]]:
    """(line number, record) for each record of a JSONL or CSV questions file, and a `Problem`
    for each line that is not a record (bad JSON, not an object, a short CSV row).

    Lines are split on "\\n" only: a JSON string may hold U+2028, U+2029 or U+0085, which
    `str.splitlines()` would break at. Raises `GoldenError` (naming file and line) when the
    file as a whole cannot be read: undecodable, a JSON array instead of JSONL, a CSV header
    without a `question` column.
    """
    from ..text.documents import data_lines

    path = Path(path)
    text = read_text(path)
    if path.suffix.lower() == ".csv":
        return _csv_records(path, text)
    if text.lstrip().startswith("["):
        raise GoldenError(f"{path}:1: a JSON array; ragkit reads JSON Lines (one JSON object "
                          "per line, no enclosing [ ])")
    out, problems = [], []
    for n, line in enumerate(data_lines(text), 1):
        if not line.strip():
            continue
        try:
            rec = jsonio.loads(line)
        except jsonio.JsonLimitError as e:
            problems.append(Problem(n, "?", f"JSON past what ragkit reads ({e.msg}, column "
                                    f"{e.colno})"))
            continue
        except json.JSONDecodeError as e:
            problems.append(Problem(n, "?", f"not valid JSON ({e.msg}, column {e.colno})"))
            continue
        if not isinstance(rec, dict):
            problems.append(Problem(n, "?", f"expected a JSON object {{...}}, got "
                                    f"{type(rec).__name__}"))
            continue
        out.append((n, rec))
    return out, problems


def read_records(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, record) for a JSONL or CSV questions file; raises `GoldenError` naming
    file and line at the first line that is not a record."""
    records, problems = parse_records(path)
    if problems:
        raise GoldenError(f"{path}:{problems[0].line}: {problems[0].message}")
    return records


def question_id(rec: Mapping[str, Any], line: int) -> str:
    """The id of a record as ragkit uses it: ``1`` and ``"1"`` are the same id, and so are an
    id in NFC and in NFD."""
    qid = rec.get("id")
    return f"q{line}" if qid is None else nfc(str(qid).strip())


def _offset(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _file_text(doc: Document) -> str | None:
    """The text of `doc`'s file as read from disk, front matter included (None when it has
    no file, the file cannot be read, or it is the document's text)."""
    from ..text.documents import DocumentError, decode_text, normalize_newlines

    if not doc.path:
        return None
    try:
        raw = normalize_newlines(decode_text(Path(doc.path).read_bytes(), doc.path))
    except (OSError, DocumentError):
        return None
    return None if raw == doc.text else raw


def _not_its_file(doc: Document) -> bool:
    """Whether `doc`'s text differs from its file: front matter was split off, or HTML was
    converted (so offsets into one are not offsets into the other)."""
    from ..text.documents import HTML_SUFFIXES

    return bool(doc.path) and (doc.line_offset > 0
                               or Path(doc.path).suffix.lower() in HTML_SUFFIXES)


def _offsets_hint(doc: Document, s: int, e: int, quote: str | None) -> str:
    """What to say when a span does not check and the file itself explains it: offsets that
    count the front matter ('' when the file does not explain it)."""
    raw = _file_text(doc)
    if raw is None:
        return ""
    body = len(raw) - len(doc.text) if raw.endswith(doc.text) else None
    base = ("; offsets are into the document's text as parsed " + (
        f"(front matter excluded: the text starts at character {body} of the file)" if body
        else "(for an HTML file, the Markdown it is converted to), not into the file"))
    if quote and e <= len(raw) and nfc(raw[s:e]) == nfc(quote):
        return base + (f", so this quote is the span [{s - body}, {e - body})"
                       if body and s >= body else "")
    if not quote and not e <= len(doc.text) and e <= len(raw):
        return base
    return ""


def resolve_evidence(record: Mapping[str, Any], docs: Mapping[str, Document], line: int,
                     notes: list[str] | None = None
                     ) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Spans for one question's evidence, each given as a quote (found in the documents) or as
    a span (``doc_id``, ``start``, ``end``, checked against the text as parsed and against its
    quote when it has one); problems for evidence that is missing, ambiguous or wrong. What
    is kept but could not be checked (a span without its quote in a document with front
    matter) is added to `notes`."""
    qid = question_id(record, line)
    spans, problems = [], []
    by_nfc = {nfc(k): k for k in docs}
    evidence = record.get("evidence", [])
    if evidence is None:
        evidence = []
    if not isinstance(evidence, list):
        return [], [Problem(line, qid, f"evidence must be a list of objects like "
                            f'[{{"doc_id": ..., "quote": ...}}], got {type(evidence).__name__}')]
    for i, ev in enumerate(evidence, 1):
        where = f"evidence {i}: " if len(evidence) > 1 else ""
        if not isinstance(ev, dict):
            problems.append(Problem(line, qid, f"{where}each evidence must be an object with "
                                    f"a quote (or doc_id, start, end), got {type(ev).__name__}"))
            continue
        doc_id = ev.get("doc_id")
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if doc_id is not None and not isinstance(doc_id, str):
            problems.append(Problem(line, qid, f"{where}doc_id must be a string, got "
                                    f"{doc_id!r}"))
            continue
        doc_id = by_nfc.get(nfc(doc_id), doc_id) if doc_id else None
        if doc_id is not None and doc_id not in docs:
            near = difflib.get_close_matches(doc_id, list(docs), n=2, cutoff=0.5)
            problems.append(Problem(line, qid, f"{where}unknown document {doc_id!r}"
                                    + (f" (did you mean {', '.join(map(repr, near))}?)"
                                       if near else "")))
            continue
        quote = ev.get("quote")
        if quote is not None and not isinstance(quote, str):
            problems.append(Problem(line, qid, f"{where}quote must be a string, got "
                                    f"{type(quote).__name__}"))
            continue
        if "start" in ev or "end" in ev:
            s, e = _offset(ev.get("start")), _offset(ev.get("end"))
            if doc_id is None:
                problems.append(Problem(line, qid, f"{where}a span needs its doc_id"))
                continue
            if s is None or e is None:
                problems.append(Problem(line, qid, f"{where}start and end must be integer "
                                        f"character offsets, got {ev.get('start')!r} and "
                                        f"{ev.get('end')!r}"))
                continue
            doc = docs[doc_id]
            if not 0 <= s < e <= len(doc.text):
                problems.append(Problem(line, qid, f"{where}span [{s}, {e}) is not inside "
                                        f"{doc_id} (0 <= start < end <= {len(doc.text)})"
                                        + (_offsets_hint(doc, s, e, quote) if 0 <= s < e
                                           else "")))
            elif quote and nfc(doc.text[s:e]) != nfc(quote):
                problems.append(Problem(line, qid, f"{where}span [{s}, {e}) of {doc_id} is "
                                        f"{doc.text[s:e][:60]!r}, not the quote "
                                        f"{quote[:60]!r}" + _offsets_hint(doc, s, e, quote)))
            else:
                if not quote and notes is not None and _not_its_file(doc):
                    notes.append(f"{where}span [{s}, {e}) of {doc_id} has no quote, so its "
                                 "offsets cannot be checked; they are read as offsets into "
                                 "the text as parsed (front matter excluded; for HTML, the "
                                 "Markdown it is converted to) — add the quote")
                spans.append({"doc_id": doc_id, "start": s, "end": e,
                              "quote": doc.text[s:e]})
            continue
        if not (quote or "").strip():
            problems.append(Problem(line, qid, f"{where}evidence without a quote (or a span)"))
            continue
        candidates = [docs[doc_id]] if doc_id else list(docs.values())
        found = [(d.id, s, e) for d in candidates for s, e in locate(d.text, quote)]
        if len(found) == 1:
            d, s, e = found[0]
            spans.append({"doc_id": d, "start": s, "end": e, "quote": docs[d].text[s:e]})
        elif not found:
            near = [c for d in candidates for c in closest(d.text, nfc(quote), 1)][:2]
            problems.append(Problem(line, qid, f"{where}quote not found: {quote[:60]!r}; "
                                    f"closest: {near}"))
        else:
            places = ", ".join(f"{d}@{s}" for d, s, _ in found[:5])
            problems.append(Problem(line, qid, f"{where}quote occurs {len(found)} times "
                                    f"({places}); quote more text so it is unique"))
    return spans, problems


def overlapping_evidence(spans: list[dict[str, Any]] | tuple[Span, ...]) -> str | None:
    """Why one question's evidence will be scored as fewer units than it lists (the same span
    twice, or spans that share characters), or None when every span is its own unit."""
    gold = [s if isinstance(s, Span) else Span(s["doc_id"], s["start"], s["end"])
            for s in spans]
    merged = merge_gold(gold)
    if len(merged) == len(gold):
        return None
    pairs = [(i, j) for i, a in enumerate(gold, 1) for j, b in enumerate(gold, 1)
             if i < j and a.doc_id == b.doc_id and a.start < b.end and b.start < a.end]
    said = ", ".join(f"{i} and {j}" for i, j in pairs[:3]) + (" ..." if len(pairs) > 3 else "")
    return (f"evidence {said} overlap (the same text given twice, or quotes that share "
            f"characters): scored as {len(merged)} gold span(s), not {len(gold)}")


def check_questions(questions: str | Path, docs: Mapping[str, Document]
                    ) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Every question of a questions file (JSONL or CSV; evidence as quotes or spans), checked
    before anything is embedded: span-anchored records for the questions that pass, and a
    `Problem` (with its line) for each one skipped — unreadable line, duplicate id (naming
    both lines), no question text, no evidence (and not a refusal), evidence that cannot be
    anchored. A question kept with evidence that overlaps, or with a span that could not be
    checked, gets a `GoldenWarning` naming file, line and id. Raises `GoldenError` when the
    file as a whole cannot be read."""
    rows, problems = parse_records(questions)
    records: list[dict[str, Any]] = []
    first_line: dict[str, int] = {}
    for n, rec in rows:
        qid = question_id(rec, n)
        if not qid:
            problems.append(Problem(n, "?", "empty id"))
            continue
        if qid in first_line:
            problems.append(Problem(n, qid, f"duplicate id {qid!r}: line {first_line[qid]} "
                                    "has the same id (ids are compared as text, so 1 and "
                                    "\"1\" are one id); give every question its own id"))
            continue
        first_line[qid] = n
        text, qtype, context = rec.get("question"), rec.get("type"), rec.get("context")
        wrong = next((message for failed, message in (
            (not isinstance(text, str) or not text.strip(),
             f"no question text (a 'question' field with the question), got {text!r}"),
            (qtype is not None and qtype not in QUESTION_TYPES,
             f"type {qtype!r} is not one of {', '.join(QUESTION_TYPES)}"),
            (context is not None and not isinstance(context, dict),
             f"context must be an object, got {type(context).__name__}"),
        ) if failed), None)  # the first field that is wrong, as the reader fixes them in order
        if wrong:
            problems.append(Problem(n, qid, wrong))
            continue
        notes: list[str] = []
        spans, probs = resolve_evidence(rec, docs, n, notes)
        if probs:
            problems.extend(probs)
            continue
        if qtype == "refusal" and spans:
            problems.append(Problem(n, qid, "a refusal (a question the documents do not "
                                    "answer) cannot have evidence"))
            continue
        if not spans and qtype != "refusal":
            problems.append(Problem(n, qid, "no evidence: give at least one quote, or mark "
                                    "the question \"type\": \"refusal\" if the documents do "
                                    "not answer it"))
            continue
        for note in filter(None, [*notes, overlapping_evidence(spans)]):
            warnings.warn(f"{questions}:{Problem(n, qid, note)}", GoldenWarning, stacklevel=2)
        records.append({"id": qid, "question": text, "type": qtype or "lookup",
                        "answer": rec.get("answer") or "", "evidence": spans,
                        "context": context or {},
                        **({"synthetic": True} if rec.get("synthetic") else {})})
    problems.sort(key=lambda p: p.line)
    return records, problems


def build_golden(questions: str | Path, docs: Mapping[str, Document], out: str | Path | None
                 = None) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Resolve every quote to a span; write the span-anchored records to `out` if given."""
    records, problems = check_questions(questions, docs)
    if out is not None:
        from ..cache import atomic_write_text

        atomic_write_text(out, "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                       for r in records))
    return records, problems


def validate_golden(path: str | Path, docs: Mapping[str, Document]) -> list[str]:
    """Every problem in a span-anchored golden file (empty list = valid)."""
    rows, bad = parse_records(path)
    errors = [f"{path}:{p.line}: {p.message}" for p in bad]
    by_nfc = {nfc(k): k for k in docs}
    seen: dict[str, int] = {}
    for n, rec in rows:
        where = f"{path}:{n}"
        qid = None if rec.get("id") is None else nfc(str(rec.get("id")).strip())
        if not qid:
            errors.append(f"{where}: missing id")
        elif qid in seen:
            errors.append(f"{where}: duplicate id {qid!r} (also on line {seen[qid]})")
        else:
            seen[qid] = n
        if rec.get("type") not in QUESTION_TYPES:
            errors.append(f"{where}: type {rec.get('type')!r} not in {QUESTION_TYPES}")
        if not isinstance(rec.get("question"), str) or not rec["question"].strip():
            errors.append(f"{where}: empty question")
        ev = rec.get("evidence", [])
        if not isinstance(ev, list):
            errors.append(f"{where}: evidence must be a list, got {type(ev).__name__}")
            continue
        if (rec.get("type") == "refusal") != (not ev):
            errors.append(f"{where}: refusals, and only refusals, have no evidence")
        for e in ev:
            if not isinstance(e, dict):
                errors.append(f"{where}: evidence must be objects, got {type(e).__name__}")
                continue
            doc = docs.get(by_nfc.get(nfc(e["doc_id"]), e["doc_id"])) if isinstance(
                e.get("doc_id"), str) else None
            if doc is None:
                errors.append(f"{where}: unknown document {e.get('doc_id')!r}")
                continue
            s, t = _offset(e.get("start")), _offset(e.get("end"))
            if s is None or t is None or not 0 <= s < t <= len(doc.text):
                errors.append(f"{where}: bad span [{e.get('start')!r}, {e.get('end')!r}) in "
                              f"{doc.id}" + (_offsets_hint(doc, s, t, e.get("quote")) if
                                             s is not None and t is not None and 0 <= s < t
                                             else ""))
            elif not isinstance(e.get("quote"), str) or nfc(doc.text[s:t]) != nfc(e["quote"]):
                errors.append(f"{where}: span [{s}, {t}) of {doc.id} is not the quoted text"
                              + _offsets_hint(doc, s, t, e.get("quote")))
        context = rec.get("context") or {}
        if not isinstance(context, dict):
            errors.append(f"{where}: context must be an object")
            continue
        for key in context:
            if key not in ("region", "product", "as_of", "doc_type"):
                errors.append(f"{where}: unknown context key {key!r}")
    return errors


def read_golden(path: str | Path, docs: Mapping[str, Document]) -> list[Query]:
    """Queries from a span-anchored golden file; raises `GoldenError` if it does not validate,
    and warns (`GoldenWarning`) for each question whose evidence overlaps."""
    errors = validate_golden(path, docs)
    if errors:
        raise GoldenError(f"{len(errors)} problem(s):\n" + "\n".join(errors[:20]))
    out = []
    by_nfc = {nfc(k): k for k in docs}
    for n, rec in read_records(path):
        rec = {**rec, "id": question_id(rec, n)}
        gold = tuple(Span(by_nfc.get(nfc(e["doc_id"]), e["doc_id"]), e["start"], e["end"])
                     for e in rec["evidence"])
        note = overlapping_evidence(gold)
        if note:
            warnings.warn(f"{path}:{Problem(n, rec['id'], note)}", GoldenWarning, stacklevel=2)
        out.append(Query(id=rec["id"], text=rec["question"], gold=gold, type=rec["type"],
                         answer=rec.get("answer", ""), context=rec.get("context") or {},
                         metadata={"synthetic": bool(rec.get("synthetic"))}))
    return out
