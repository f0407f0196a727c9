"""Notebook 10's lesson on PDFs: what each chunker hands the model for a table question, and
FinanceBench's configurations side by side at one budget.

- `table_cuts`: for one gold row of a table, per chunker: how many chunks it made, whether one
  chunk holds the whole row, and whether the column names (the table's header row) reach the
  model with it, in the chunk's body or in its prefix;
- `board`: every configuration of the design's runs on one benchmark at one budget: span
  recall@B, pass@B and page_hit@B with their 95 % intervals, on one half of the questions;
- `chunk_sizes`: how many chunks each configuration embedded and indexed, and their mean
  length, from the results rows (what a chunker costs as the corpus grows).
"""

from __future__ import annotations

from typing import Any, Sequence

from ..evaluate.runs import Metric
from ..evaluate.stats import interval
from ..text.tokens import count_tokens
from ..types import Document, Span


def header_row(doc: Document, span: Span) -> str:
    """The header row of the Markdown table that holds `span` (the line above its delimiter
    row), or "" when `span` is not inside a table."""
    text = doc.text
    start = text.rfind("\n\n", 0, span.start) + 2 if "\n\n" in text[:span.start] else 0
    block = text[start:span.start]
    lines = block.split("\n")
    if len(lines) < 2 or not lines[0].startswith("| ") or not lines[1].startswith("|---"):
        return ""
    return lines[0]


def table_cuts(doc: Document, gold: Span, chunkers: Sequence[Any]) -> list[dict[str, Any]]:
    """Per chunker (see the module docstring): ``chunker``, ``chunks``, ``row whole`` (one
    chunk holds all of `gold`), ``header with it`` (that chunk's body or prefix holds the
    table's header row), ``tokens`` (cl100k tokens of that chunk, prefix included) and
    ``pages`` (its page range)."""
    head = header_row(doc, gold)
    out = []
    for chunker in chunkers:
        chunks = chunker.chunk(doc)
        holding = [c for c in chunks if c.start <= gold.start and gold.end <= c.end]
        best = min(holding, key=lambda c: c.end - c.start) if holding else None
        out.append({
            "chunker": chunker.label, "chunks": len(chunks), "row whole": best is not None,
            "header with it": bool(best and head and (head in best.text or head in best.prefix)),
            "tokens": (count_tokens(best.prefix) + count_tokens(best.text)) if best else None,
            "pages": "–".join(map(str, best.metadata.get("pages", []))) if best else "",
            "_chunk": best})
    return out


def board(runs: Sequence[Any], benchmark: str, budget: int, split: str = "held-out"
          ) -> list[dict[str, Any]]:
    """Every run on `benchmark`: its configuration, n, and the mean with its 95 % interval of
    recall@B, pass@B and page_hit@B at `budget` on `split`, best recall first."""
    rows = []
    for r in runs:
        if r.benchmark != benchmark:
            continue
        row: dict[str, Any] = {"configuration": r.config.label, "baseline": r.config.simple}
        for name in ("recall", "pass", "page_hit"):
            metric = Metric(name, budget)
            if metric.column not in r.scores:
                continue
            values = r.values(metric, split)
            mean, low, high = interval(values.to_numpy())
            row.update({name: mean, f"{name}_low": low, f"{name}_high": high, "n": len(values)})
        rows.append(row)
    return sorted(rows, key=lambda x: -x.get("recall", 0.0))


def chunk_sizes(rows, benchmark: str, notebook: str = "bench_design") -> dict[str, dict]:
    """configuration -> {"n_chunks", "mean_chunk_chars"} from the results rows (`rows`, as
    `ragkit.report.load_results` reads them) of `notebook` on `benchmark`."""
    mine = rows[(rows.notebook == notebook) & (rows.benchmark == benchmark)
                & rows.metric.isin(["n_chunks", "mean_chunk_chars"])]
    out: dict[str, dict] = {}
    for r in mine.itertuples():
        out.setdefault(r.strategy, {})[r.metric] = float(r.value)
    return out
