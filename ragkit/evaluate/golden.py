"""Golden sets anchored to character spans: author them with quotes, store them with offsets.

Authors write each question's evidence as a verbatim quote (``questions.jsonl``, read by
`ragkit.evaluate.questions`); `ragkit.text.locate.locate` finds the quote in its document —
exactly first, then ignoring differences in whitespace — and `build_golden` writes
``golden.jsonl`` with ``(doc_id, start, end)`` spans. A quote that is missing or occurs more
than once is never guessed: it is reported with its line in the questions file and the closest
candidates. `validate_golden` re-checks every stored span against the text.

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
"""

from __future__ import annotations

import difflib
import json
import warnings
from pathlib import Path
from typing import Any, Mapping

from ..files import shown
from ..text.locate import closest, locate, locate_letters, nfc
from ..types import Document, Query, Span, merge_gold
from .questions import GoldenError, Problem, parse_records, question_id, read_records

QUESTION_TYPES = ("lookup", "aggregation", "comparison", "inference", "ambiguous", "refusal")


class GoldenWarning(UserWarning):
    """Evidence kept, but not as written (merged, or unchecked); the message names file, line
    and question."""


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
        got = _resolve_one(ev, where, docs, by_nfc, notes)
        if isinstance(got, str):
            problems.append(Problem(line, qid, got))
        else:
            spans.append(got)
    return spans, problems


def _resolve_one(ev: Any, where: str, docs: Mapping[str, Document], by_nfc: Mapping[str, str],
                 notes: list[str] | None) -> dict[str, Any] | str:
    """One piece of evidence as a span, or the problem (its message, `where` first) that keeps
    it out: not an object, a doc_id or quote of the wrong type, an unknown document, then what
    `_span_evidence` or `_quote_evidence` finds."""
    if not isinstance(ev, dict):
        return (f"{where}each evidence must be an object with a quote (or doc_id, start, end), "
                f"got {type(ev).__name__}")
    doc_id = ev.get("doc_id")
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if doc_id is not None and not isinstance(doc_id, str):
        return f"{where}doc_id must be a string, got {doc_id!r}"
    doc_id = by_nfc.get(nfc(doc_id), doc_id) if doc_id else None
    if doc_id is not None and doc_id not in docs:
        near = difflib.get_close_matches(doc_id, list(docs), n=2, cutoff=0.5)
        return f"{where}unknown document {doc_id!r}" + (
            f" (did you mean {', '.join(map(repr, near))}?)" if near else "")
    quote = ev.get("quote")
    if quote is not None and not isinstance(quote, str):
        return f"{where}quote must be a string, got {type(quote).__name__}"
    if "start" in ev or "end" in ev:
        return _span_evidence(ev, where, docs, doc_id, quote, notes)
    return _quote_evidence(where, docs, doc_id, quote)


def _span_evidence(ev: Mapping[str, Any], where: str, docs: Mapping[str, Document],
                   doc_id: str | None, quote: str | None,
                   notes: list[str] | None) -> dict[str, Any] | str:
    """Evidence given as a span: its offsets checked against the text as parsed, and against
    its quote when it has one (a span without one, in a document that is not its file, is
    kept with a note)."""
    s, e = _offset(ev.get("start")), _offset(ev.get("end"))
    if doc_id is None:
        return f"{where}a span needs its doc_id"
    if s is None or e is None:
        return (f"{where}start and end must be integer character offsets, got "
                f"{ev.get('start')!r} and {ev.get('end')!r}")
    doc = docs[doc_id]
    if not 0 <= s < e <= len(doc.text):
        return (f"{where}span [{s}, {e}) is not inside {doc_id} (0 <= start < end <= "
                f"{len(doc.text)})" + (_offsets_hint(doc, s, e, quote) if 0 <= s < e else ""))
    if quote and nfc(doc.text[s:e]) != nfc(quote):
        return (f"{where}span [{s}, {e}) of {doc_id} is {doc.text[s:e][:60]!r}, not the quote "
                f"{quote[:60]!r}" + _offsets_hint(doc, s, e, quote))
    if not quote and notes is not None and _not_its_file(doc):
        notes.append(f"{where}span [{s}, {e}) of {doc_id} has no quote, so its offsets cannot "
                     "be checked; they are read as offsets into the text as parsed (front "
                     "matter excluded; for HTML, the Markdown it is converted to) — add the "
                     "quote")
    return {"doc_id": doc_id, "start": s, "end": e, "quote": doc.text[s:e]}


def _quote_evidence(where: str, docs: Mapping[str, Document], doc_id: str | None,
                    quote: str | None) -> dict[str, Any] | str:
    """Evidence given as a quote: found once (`locate`) in its document, or in any document
    when it names none; in a PDF, a quote not found so is looked for by its letters and digits
    (`locate_letters`: the cells of a table row quoted without the pipes between them). A
    quote found nowhere, or more than once, is never guessed."""
    if not (quote or "").strip():
        return f"{where}evidence without a quote (or a span)"
    candidates = [docs[doc_id]] if doc_id else list(docs.values())
    found = [(d.id, s, e) for d in candidates for s, e in locate(d.text, quote)]
    if not found:  # a PDF's Markdown puts pipes between the cells a reader quotes
        found = [(d.id, s, e) for d in candidates if d.metadata.get("source_format") == "pdf"
                 for s, e in locate_letters(d.text, quote)]
    if len(found) == 1:
        d, s, e = found[0]
        return {"doc_id": d, "start": s, "end": e, "quote": docs[d].text[s:e]}
    if not found:
        near = [c for d in candidates for c in closest(d.text, nfc(quote), 1)][:2]
        return f"{where}quote not found: {quote[:60]!r}; closest: {near}"
    places = ", ".join(f"{d}@{s}" for d, s, _ in found[:5])
    return (f"{where}quote occurs {len(found)} times ({places}); quote more text so it is "
            "unique")


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
        bad_id = id_problem(rec.get("id"))
        if bad_id:
            problems.append(Problem(n, "?", bad_id))
            continue
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


def id_problem(qid: Any) -> str | None:
    """Why `qid` cannot be a question's id (None when it can, or is absent): it must be a
    string or a whole number (``["x"]``, ``{"a": 1}``, ``true`` are not ids), without
    invisible characters (a zero-width space, a control character: ``"a\u200bb"`` prints
    exactly like ``"ab"``)."""
    if qid is None or (isinstance(qid, int) and not isinstance(qid, bool)):
        return None
    if not isinstance(qid, str):
        return (f"id must be a string or a whole number, got {type(qid).__name__} "
                f"{shown(repr(qid))[:80]}")
    hidden = sorted({ch for ch in qid.strip() if not ch.isprintable() and ch != " "})
    if hidden:
        return (f"id {shown(repr(qid))} holds invisible character(s) "
                f"{', '.join(f'U+{ord(c):04X}' for c in hidden)}; it would print like "
                "another id: remove them")
    return None


def build_golden(questions: str | Path, docs: Mapping[str, Document], out: str | Path | None
                 = None) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Resolve every quote to a span; write the span-anchored records to `out` if given."""
    records, problems = check_questions(questions, docs)
    if out is not None:
        from ..files import write_whole

        write_whole(out, "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                 for r in records).encode("utf-8"))
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
