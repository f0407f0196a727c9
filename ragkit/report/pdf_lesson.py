"""Notebook 10's lesson on PDFs: what each chunker hands the model for a table question, and
FinanceBench's configurations side by side at one budget.

- `table_cuts`: for one gold row of a table, per chunker: how many chunks it made, whether one
  chunk holds the whole row, and whether the column names (the table's header row) reach the
  model with it, in the chunk's body or in its prefix;
- `board`: every configuration of the design's runs on one benchmark at one budget: span
  recall@B, pass@B and page_hit@B with their 95 % intervals, on one half of the questions;
- `chunk_sizes`: how many chunks each configuration embedded and indexed, and their mean
  length, from the results rows (what a chunker costs as the corpus grows);
- `contrast`, `hit_text`: one FinanceBench question on which one configuration does better
  than another, and what each put first, read from the saved hits.
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
    table's header row), ``cl100k tokens`` (of that chunk, prefix included) and
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
            "cl100k tokens": (count_tokens(best.prefix) + count_tokens(best.text)) if best else None,
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


def contrast(a: Any, b: Any, metric: str, split: str = "held-out") -> str | None:
    """The question of `split` on which run `a` scores most above run `b` on `metric` (the
    first in id order among equals), or None when `a` is above `b` on none."""
    gap = (a.values(metric, split) - b.values(metric, split)).dropna()
    gap = gap[gap > 0]
    return None if gap.empty else str(gap.sort_index().idxmax())


def hit_text(hits, run: str, query: Any, docs: Any, rank: int = 1, lines: int = 8) -> str:
    """The hit at `rank` (1 = first) of `run` for `query`, from saved hits (ranks from 0 in
    `ragkit.report.load_hits`):
    a header line (document, pages, characters, whether it holds gold) and at most `lines` of
    its text, the gold between ⟦ and ⟧ (`ragkit.report.explain.clip_lines`)."""
    from ..evaluate.spans import overlaps
    from ..types import Chunk
    from .explain import _marked_text, clip_lines

    row = hits[(hits.run == run) & (hits.query_id == query.id) & (hits["rank"] == rank - 1)]
    if row.empty:
        return f"── {run}: no hit at rank {rank} for {query.id}"
    r = row.iloc[0]
    doc = docs[r.doc_id]
    chunk = Chunk.make(doc, int(r.start), int(r.end), "hit")
    on = sorted(p[2] for p in doc.metadata.get("pages", [])
                if p[0] < chunk.end and chunk.start < p[1])
    pages = (f"page {on[0]}" if len(on) == 1 else f"pages {on[0]}–{on[-1]}") if on else "no page"
    tag = "holds gold" if overlaps(chunk, query.gold, query.copies) else "no gold"
    body, kept, total = clip_lines(_marked_text(chunk.text, chunk.start, [
        g for g in query.gold if g.doc_id == doc.id]), lines)
    return (f"── #{rank} {doc.id}, {pages}, chars {chunk.start}–{chunk.end} · {tag} · "
            f"{kept} of {total} lines shown\n{body}")


def weak_pick_findings(found: Sequence[Any]) -> list[str]:
    """A sentence for each cell where ragkit's chunker is measurably ahead of a baseline that
    the tune half chose but that ranks last on the held-out half: an easy opponent there."""
    out = []
    for e in found:
        if e.factor == "chunker" and e.verdict == "beats" and e.split_rank \
                and e.split_rank[0] == e.split_rank[1] and e.split_leader:
            out.append(
                f"The one cell where the router is measurably ahead ({e.treated.label}, "
                f"{e.budget:,} tokens) sets it against {e.base.chunker}, chosen on the tune "
                f"half but last of {e.split_rank[1]} baselines on the held-out half, where "
                f"{e.split_leader[0]} has {e.split_leader[1]:.1%} span recall: one comparison "
                "against a weak pick, with intervals that are if anything too narrow.")
    return out


def header_answer(board_rows, runs_by_label: dict, keepers: Sequence[str], budget: int,
                  chunks: dict) -> tuple[str, str]:
    """(answer, cost) to notebook 10's question: do the chunkers that keep a table's header
    with its rows (`keepers`) come first on the board (`board` rows, best first)? The best of
    them is set against the first, paired on the held-out half; the cost is the chunks the
    router and one chunk per page give to embed (`chunks`: configuration -> count)."""
    from ..evaluate.runs import Metric, versus

    labels = [r["configuration"] for r in board_rows]
    top = labels[0]
    keeper = next(c for c in labels if c.rsplit("+", 1)[0] in set(keepers))
    if keeper == top:
        answer = (f"a chunker that keeps a table's header with its rows leads the FinanceBench "
                  f"board at {budget:,} tokens: {keeper}.")
    else:
        c = versus(runs_by_label[keeper], runs_by_label[top], Metric("recall", budget).column,
                   split="held-out")
        answer = (("no evidence either way: " if not c.significant else "")
                  + f"the chunkers that keep a table's header with its rows "
                  f"({', '.join(keepers)}) are not first on the FinanceBench sample at "
                  f"{budget:,} tokens, and the best of them against the first: "
                  + c.finding(keeper, top) + ".")
    n_router, n_pages = chunks.get("router+dense"), chunks.get("pages+dense")
    cost = (f" What they cost: the router gives {n_router:,.0f} chunks to embed and index, "
            f"one chunk per page {n_pages:,.0f} ({n_router / n_pages:.1f} times fewer "
            "chunks for pages; the stack embeds each long chunk in several windows)."
            if n_router and n_pages else "")
    return answer, cost
