"""Questions files read into records: JSON Lines or CSV, line by line, every line that is not a
record reported with its number, never a traceback.

`parse_records` returns ``(line, record)`` pairs and a `Problem` for each bad line (invalid
JSON, not an object, a short CSV row); `read_records` raises `GoldenError` at the first one;
`read_text` decodes the file (UTF-8 with or without a byte-order mark, UTF-16/32 with one);
`question_id` is the id a record goes by (``1`` and ``"1"`` alike, compared in NFC). The golden
set built from the records is `ragkit.evaluate.golden`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .. import jsonio
from ..files import shown
from ..text.locate import nfc


class GoldenError(ValueError):
    """The golden set is inconsistent with the documents; the message names file and line."""


@dataclass
class Problem:
    line: int
    question_id: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line} ({shown(self.question_id)}): {self.message}"


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
        bad = lone_surrogate(rec)
        if bad:
            problems.append(Problem(n, str(rec.get("id", "?")), f"{bad} holds a lone surrogate "
                                    "(a \\ud800-\\udfff escape that is half of a character): not "
                                    "text ragkit can read"))
            continue
        out.append((n, rec))
    return out, problems


def lone_surrogate(rec: Mapping[str, Any]) -> str | None:
    """The field of `rec` (``question``, ``id``, ``evidence``...) with a string holding a lone
    surrogate (valid JSON, ``"\\ud800"``, but no character: tokenizers and Arrow refuse it),
    or None. Nested values are walked without recursion."""
    for key, value in rec.items():
        stack = [key, value]
        while stack:
            item = stack.pop()
            if isinstance(item, str):
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return repr(key) if isinstance(key, str) and key.isprintable() else "a key"
            elif isinstance(item, dict):
                stack.extend(x for kv in item.items() for x in kv)
            elif isinstance(item, list):
                stack.extend(item)
    return None


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
