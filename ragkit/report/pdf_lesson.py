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
  than another, and what each put first, read from the saved hits;
- `small_n_note`: how wide the intervals are at the board's n, against the spread of its means;
- `zero_bounds`: the interval bounds that print as +0.0, exactly 0 or with more decimals;
- `pass_reading`: why pass@B is 0 on most of the board, from the gold passages' lengths;
- `fiscal_year_note`: a filing's own name for its fiscal year against FinanceBench's;
- `table_questions`: the questions whose gold overlaps a Markdown table (pipe-table lines);
- `table_reading`: how many held-out questions have gold on a table, and the header
  comparison of `header_answer` on them;
- `window_pick`: the window baseline with the most recall@B on the tune half, under dense.
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


def header_pairs(found: Sequence[Any], budget: int, benchmark: str = "financebench") -> list:
    """The one-factor comparisons that answer notebook 10's question: ragkit's router (which
    keeps a table's header with its rows) against the best simple baseline under the *same*
    retrieval, chosen on the tune half and read on the held-out half (`ragkit.experiments.
    design.effects` at `budget`), one per first stage, no reranker: only the chunker differs."""
    return sorted((e for e in found if e.benchmark == benchmark and e.factor == "chunker"
                   and e.budget == budget and e.complete and not e.treated.simple
                   and e.treated.reranker == "none"), key=lambda e: e.treated.first_stage)


def header_answer(found: Sequence[Any], budget: int, chunks: dict) -> tuple[str, str]:
    """(answer, cost) to notebook 10's question, does keeping a table's header with its rows
    matter: `header_pairs` (the router against the best simple baseline under the same
    retrieval, held-out half), one finding per first stage; "no evidence either way" first
    when none differs measurably. The cost is the chunks the router and one chunk per page give
    to embed (`chunks`: configuration -> count). ("", "") without a pair."""
    pairs = header_pairs(found, budget)
    if not pairs:
        return "", ""
    parts = [f"under {e.treated.first_stage}, " + e.recall.finding(e.treated.label, e.base.label)
             + _zero_bound(e.recall)
             + (" (one chunk per page keeps a page's tables whole too, so this pair does not "
                "test the header)" if e.base.chunker.startswith("pages") else "")
             for e in pairs]
    lead = "no evidence either way: " if not any(e.recall.significant for e in pairs) else ""
    answer = (lead + f"holding the retrieval fixed, the router (which keeps a table's header "
              f"with its rows) against the best simple baseline under the same retrieval, "
              f"chosen on the tune half and read on the held-out half, at {budget:,} tokens: "
              + "; ".join(parts) + ".")
    n_router = chunks.get("router+dense")
    rivals = {e.base.chunker: chunks.get(f"{e.base.chunker}+dense") for e in pairs}
    cost = (f" What they cost: the router gives {n_router:,.0f} chunks to embed and index, "
            + ", ".join(f"{name} {n:,.0f}" for name, n in rivals.items() if n)
            + " (the stack embeds each long chunk in several windows)."
            if n_router and any(rivals.values()) else "")
    return answer, cost


def small_n_note(board_rows: Sequence[dict], found: Sequence[Any], budget: int) -> str:
    """What n held-out questions can tell, from the board (`board` rows at `budget`) and the
    paired effects at `budget`: the median width of one configuration's 95 % interval and of a
    paired difference's, against how far apart the board's means are, and (arithmetic, an
    interval's width shrinking as 1/sqrt(n)) how many questions would bring a configuration's
    interval down to that spread.

    >>> rows = [{"recall": 0.2, "recall_low": 0.0, "recall_high": 0.4, "n": 12},
    ...         {"recall": 0.1, "recall_low": 0.0, "recall_high": 0.3, "n": 12}]
    >>> print(small_n_note(rows, [], 1024).split(";")[0])
    n = 12 held-out questions: one configuration's 95 % interval on recall@B1024 is a median 35.0 points wide
    """
    import numpy as np

    n = int(max(r["n"] for r in board_rows))
    widths = [100 * (r["recall_high"] - r["recall_low"]) for r in board_rows]
    spread = 100 * (max(r["recall"] for r in board_rows) - min(r["recall"] for r in board_rows))
    paired = [100 * (e.recall.high - e.recall.low) for e in found if e.budget == budget]
    width = float(np.median(widths))
    out = (f"n = {n} held-out questions: one configuration's 95 % interval on recall@B{budget} "
           f"is a median {width:.1f} points wide")
    if paired:
        out += f", a paired difference's {float(np.median(paired)):.1f} points"
    out += (f"; the board's means lie within {spread:.1f} points of each other (best minus "
            "worst).")
    if width > spread:
        out += (" A typical configuration's interval is wider than the whole spread of the "
                "means: at this n the board cannot rank the configurations, so it cannot answer "
                "the opening question; it shows how to measure it.")
    if spread > 0 and width > spread:
        out += (f" An interval as narrow as that spread would take about "
                f"{n * (width / spread) ** 2:,.0f} questions (arithmetic: a width shrinks as "
                "1/sqrt(n)).")
    return out


def _zero_bound(c: Any) -> str:
    """A clause for a paired comparison's interval bound that prints as +0.0 points: exactly
    0, or its value with enough decimals ("" when no bound rounds to 0).

    >>> from types import SimpleNamespace as C
    >>> _zero_bound(C(low=-0.154, high=0.0)), _zero_bound(C(low=-0.1, high=0.00003))
    ('; its bound printed +0.0 is exactly 0', '; its bound printed +0.0 is +0.003 points')
    """
    for bound in (c.low, c.high):
        if round(100 * bound, 1) == 0:
            return ("; its bound printed +0.0 is exactly 0" if bound == 0 else
                    f"; its bound printed +0.0 is {_decimals(100 * bound)} points")
    return ""


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _decimals(x: float) -> str:
    """`x` (points) with one decimal, or with as many as its first non-zero digit needs.

    >>> _decimals(3.14159), _decimals(0.0123), _decimals(-0.0004), _decimals(0.0)
    ('+3.1', '+0.01', '-0.0004', '+0.0')
    """
    for places in range(1, 7):
        text = f"{x:+.{places}f}"
        if x == 0 or text.strip("+-0.") or places == 6:
            return text
    return f"{x:+.6f}"


def zero_bounds(found: Sequence[Any]) -> str:
    """The interval bounds of the effects that `ragkit.report.guide`'s tables show (its
    `questions`) that print as +0.0 or -0.0 points with one decimal: those exactly 0, and why (a comparison with no losses
    has a difference of exactly 0 in every bootstrap draw of tied questions only, and with
    t of n questions tied a share (t/n)^n of draws are such), and the others with enough
    decimals to show they are not 0."""
    from .guide import questions

    exact, near, examples = 0, [], []
    for e in [e for shown in questions(found).values() for e in shown]:
        for metric, c in (("recall@B", e.recall), ("pass@B", e.pass_)):
            for side, bound in (("low", c.low), ("high", c.high)):
                if round(100 * bound, 1) != 0:
                    continue
                if bound == 0:
                    exact += 1
                    if side == "low" and c.losses == 0 and c.wins and not examples:
                        examples.append(c)
                else:
                    near.append(f"{e.treated.label} against {e.base.label}, {e.budget:,} "
                                f"tokens, {metric} {side} bound: {_decimals(100 * bound)} points")
    if not exact and not near:
        return "No interval bound above rounds to 0.0."
    out = [f"Of the bounds printed as +0.0 or -0.0 above, {exact} are exactly 0, not a small "
           f"number rounded, and {len(near)} are not" + (":" if near else ".")] + near
    if examples:
        c = examples[0]
        out.append(f"Why exactly 0: take a comparison with no losses, such as "
                   f"{_count(c.wins, 'win')} and {_count(c.ties, 'tie')} in {c.n} questions. "
                   f"A bootstrap draw that happens to pick only tied questions has a difference "
                   f"of exactly 0, and such draws are common: ({c.ties}/{c.n})^{c.n} = "
                   f"{(c.ties / c.n) ** c.n:.0%} of them, far more than the 2.5 % that lie "
                   "below a 95 % interval's lower bound. So the interval starts at exactly 0.")
    return "\n".join(out)


def pass_reading(board_rows: Sequence[dict], gold_tokens: Sequence[int], budget: int,
                 window: int = 256) -> str:
    """Why pass@B is 0 on most of the board (`board` rows at `budget`): a pass needs a gold
    passage wholly inside the context, and `gold_tokens` (the cl100k tokens of each held-out
    gold passage) says how long they are against the budget and against `window` (MiniLM's
    window, about the size of most configurations' chunks).

    >>> rows = [{"configuration": "pages+dense", "pass": 0.25}, {"configuration": "x", "pass": 0.0}]
    >>> pass_reading(rows, [100, 300, 500, 1500], 1024).split(":")[0]
    'pass@B1024 is 0 for 1 of 2 configurations on the held-out half'
    """
    import numpy as np

    zero = [r for r in board_rows if not r.get("pass")]
    some = [f"{r['configuration']} ({r['pass']:.1%})" for r in board_rows if r.get("pass")]
    g = np.asarray(gold_tokens)
    out = (f"pass@B{budget} is 0 for {len(zero)} of {len(board_rows)} configurations on the "
           f"held-out half: a pass needs a gold passage wholly inside the context. The "
           f"held-out questions' {len(g)} gold passages have a median of {float(np.median(g)):,.0f}"
           f" cl100k tokens; {int((g > budget).sum())} of them longer than the whole budget of "
           f"{budget:,} (no configuration can pass those) and {int((g > window).sum())} longer "
           f"than {window} tokens, the window MiniLM reads and about the size of most chunks "
           "here: such a passage passes only when every chunk it spans is retrieved and fits "
           "in the budget, one missing chunk and it counts 0.")
    if some:
        out += " Above 0: " + ", ".join(some) + "."
    return out


def fiscal_year_note(doc: Document, question: str) -> str:
    """How a filing names its fiscal year against how FinanceBench and the question name it,
    quoted from `doc`: a retailer's fiscal year ending early in the next calendar year is
    named by the company for the year it starts in, and by FinanceBench (the document's name,
    the question's "FY") for the year it ends in. "" when the text does not say.

    >>> d = Document("ACME_2023Q4_EARNINGS", '# Fiscal 2022 Results\\nthe fifty-two-week '
    ...              'period (“fiscal year”) ended January 28, 2023 compared')
    >>> print(fiscal_year_note(d, "What drove sales in FY2023?"))  # doctest: +NORMALIZE_WHITESPACE
    How the years are named: the filing reports the “fiscal year” ended January 28, 2023 and
    calls it Fiscal 2022 (its own heading); FinanceBench names the document ACME_2023Q4_EARNINGS
    and the question asks about FY2023, by the calendar year in which that fiscal year ends.
    So the filing's “Fiscal 2022” is the question's FY2023.
    """
    import re

    end = re.search(r"\((?:“|\")fiscal year(?:”|\")\)\s+ended\s+([A-Z][a-z]+\s+\d{1,2},\s+\d{4})",
                    doc.text)
    own = re.search(r"Fiscal (\d{4}) Results", doc.text)
    asked = re.search(r"\bFY\s?(\d{4})\b", question)
    if not (end and own and asked):
        return ""
    ended = " ".join(end.group(1).split())
    return (f"How the years are named: the filing reports the “fiscal year” ended {ended} and "
            f"calls it Fiscal {own.group(1)} (its own heading); FinanceBench names the "
            f"document {doc.id} and the question asks about FY{asked.group(1)}, by the calendar "
            f"year in which that fiscal year ends. So the filing's “Fiscal {own.group(1)}” is "
            f"the question's FY{asked.group(1)}.")


def stack_reading(found: Sequence[Any], chunker: str, budget: int) -> str:
    """Whether the stack (which reads a long chunk in windows) changes what dense search
    finds on `chunker`'s chunks at `budget`, from the paired first-stage effect: the two
    means' difference with its interval and n, and "no measurable difference" when the
    interval holds 0 ("" when the effect was not measured)."""
    for e in found:
        if (e.factor == "first_stage" and e.budget == budget and e.treated.chunker == chunker
                and e.treated.first_stage == "stack" and e.base.first_stage == "dense"):
            c = e.recall
            where = ("no measurable difference" if c.low <= 0 <= c.high
                     else f"a measurable difference ({'stack' if c.diff > 0 else 'dense'} "
                          "ahead)")
            return (f"On the {chunker} chunks at {budget:,} tokens, the stack minus dense search: "
                    f"{100 * c.diff:+.1f} points of span recall (95 % CI [{100 * c.low:+.1f}, "
                    f"{100 * c.high:+.1f}], n = {c.n}): {where} at this n.")
    return ""


def board_place(board_rows: Sequence[dict], label: str) -> str:
    """Where `label` stands on a board (`board`, best recall first): its mean span recall
    and its rank among the configurations ("" when it is not on the board)."""
    for i, row in enumerate(board_rows, 1):
        if row["configuration"] == label:
            return (f"{label} has {row['recall']:.1%} span recall on the held-out half, "
                    f"{i} of {len(board_rows)} on the board")
    return ""


def table_questions(queries: Sequence[Any], docs: dict, ids: Any = None) -> list[str]:
    """Ids of `queries` (those in `ids`, when given) whose gold overlaps a line of a Markdown
    table in the extracted text: a line that starts with ``|`` and shares a character with a
    gold span."""
    out = []
    for q in queries:
        if ids is not None and q.id not in ids:
            continue
        for g in q.gold:
            text = docs[g.doc_id].text
            start = text.rfind("\n", 0, g.start) + 1  # the first gold line, from its start
            end = text.find("\n", g.end)
            lines = text[start:len(text) if end < 0 else end].split("\n")
            if any(x.lstrip().startswith("|") for x in lines):
                out.append(q.id)
                break
    return out


WINDOWS = ("fixed_chars", "fixed_tokens", "recursive")


def window_pick(runs: Sequence[Any], benchmark: str, budget: int, retrieval: str = "dense"
                ) -> str | None:
    """The window baseline (fixed or recursive windows: `WINDOWS`) with the most recall@B at
    `budget` on the tune half of `benchmark` under `retrieval`, as a chunker label; None when
    no such run is saved."""
    rows = [r for r in board(runs, benchmark, budget, split="tune")
            if r["configuration"].endswith("+" + retrieval)
            and r["configuration"].split("(")[0] in WINDOWS and "recall" in r]
    return rows[0]["configuration"].rsplit("+", 1)[0] if rows else None


TOO_FEW = 10  # fewer paired questions than this: a comparison is shown but not read


def table_reading(bench: Any, found: Sequence[Any], runs_by_label: dict, budget: int) -> str:
    """How many of the held-out questions of `bench` have gold overlapping a Markdown table
    (`table_questions`), and `header_answer`'s comparisons (`header_pairs`: the router against
    the best simple baseline under the same retrieval) on those questions alone, with n; below
    `TOO_FEW` questions, said to be too few to read."""
    from ..evaluate.runs import Metric, versus

    pairs = [e for e in header_pairs(found, budget)
             if e.treated.label in runs_by_label and e.base.label in runs_by_label]
    if not pairs:
        return ""
    metric = Metric("recall", budget).column
    held = set(runs_by_label[pairs[0].treated.label].values(metric, "held-out").index)
    on = table_questions(bench.queries, bench.docs_by_id(), held)
    out = (f"Of the {len(held)} held-out questions, {len(on)} have gold overlapping a Markdown "
           "table of the extracted text (a line that starts with a pipe)")
    if not on:
        return out + ": the header question cannot be read on table questions here."
    out += f". On those {len(on)} alone: " + "; ".join(
        f"under {e.treated.first_stage}, " + versus(
            runs_by_label[e.treated.label], runs_by_label[e.base.label], metric, on=on,
            split="held-out").finding(e.treated.label, e.base.label) for e in pairs)
    return out + (f"; n = {len(on)} is too small to tell anything (fewer than {TOO_FEW})."
                  if len(on) < TOO_FEW else ".")
