"""Look inside one question: where the gold sits, how the chunker cut it, what came back.

These helpers make the course's failure stories computed rather than told:

- `diagnose` says, from the spans alone, why a query failed: the gold was *split* across chunks
  (no single chunk holds it), *missed* (nothing in the top k touches it), *partial* (the top k
  hold only part of it) or *ok*;
- `chunk_view` renders every chunk that touches a gold span, whole, with the chunk boundaries
  drawn in and the gold highlighted (HTML for Jupyter, plain markers for text), so a reader
  sees the cut and the decisive words on either side of it;
- `hits_table` lists what a retriever returned, marking the chunks that overlap the gold, and
  `hits_text` prints the top hits (in full, or clipped around the gold: `clip_lines`);
- `staged_status` turns the verdicts of several strategies on the staged cases into one
  status per case: fails naively / fixed by which strategy / not fixed / does not fail;
- `encoder_overflow` counts the chunks whose body alone fills the encoder's input, so that
  whatever is placed after the body (a preamble with ``placement="after"``) is never read;
- `score_views` scores one query's ranked hits both ways the course reports — the top k
  chunks, and contexts of a few token budgets — so a reader sees where each number comes from,
  and `views_reason` says in words why two of those views differ on one question.
"""

from __future__ import annotations

import html
from typing import Mapping, Sequence

from ..evaluate.budget import budget_scores, count_tokens, pack_context
from ..evaluate.metrics import query_scores
from ..evaluate.spans import covered_fraction, intersect, overlaps
from ..retrieve.retrievers import Hit
from ..types import Chunk, Document, Query, Span


def chunks_touching(span: Span, chunks: Sequence[Chunk]) -> list[Chunk]:
    return [c for c in chunks if c.doc_id == span.doc_id and intersect(c.span, (span.start,
                                                                                 span.end))]


def gold_pieces(span: Span, chunks: Sequence[Chunk]) -> int:
    """The number of pieces a chunker cut a gold span into: the fewest chunks whose union
    covers as much of the span as all the chunks do. A span inside one chunk is 1 piece even
    when an overlapping neighbour also touches it; a span cut across two windows is 2.

    >>> from ragkit.types import Chunk, Span
    >>> gold = Span("d", 100, 200)
    >>> chunk = lambda start, end: Chunk("d", start, end, "x" * (end - start), "fixed")
    >>> cut, overlapping = [chunk(0, 150), chunk(150, 300)], [chunk(0, 250), chunk(180, 400)]
    >>> gold_pieces(gold, cut), gold_pieces(gold, overlapping)
    (2, 1)
    """
    spans = [(max(c.start, span.start), min(c.end, span.end))
             for c in chunks_touching(span, chunks)]
    pieces, pos = 0, span.start
    while pos < span.end:
        reach = max((end for start, end in spans if start <= pos < end), default=None)
        if reach is None:  # a gap no chunk covers: go on from the next chunk
            pos = min((start for start, _ in spans if start > pos), default=span.end)
            continue
        pieces, pos = pieces + 1, reach
    return pieces


def encoder_overflow(chunks: Sequence[Chunk], embedder) -> dict:
    """How many chunks fill the encoder's input with their body alone (the chunk's own prefix
    left out), counted with the encoder's own tokenizer, special tokens included: ``chunks``,
    ``over`` (bodies of at least ``limit`` tokens) and ``limit`` (``embedder.max_tokens``).
    The encoder truncates at the limit, so text appended after such a body is cut unread.

    >>> from ragkit.types import Chunk
    >>> class Words:  # a stand-in encoder: one token per word, plus [CLS] and [SEP]
    ...     max_tokens = 6
    ...     def count_tokens(self, texts, kind="document"):
    ...         return [len(t.split()) + 2 for t in texts]
    >>> chunks = [Chunk("d", 0, 7, "a b c d", "x", prefix="a long prefix is not counted"),
    ...           Chunk("d", 0, 3, "a b", "x")]
    >>> encoder_overflow(chunks, Words())
    {'chunks': 2, 'over': 1, 'limit': 6}
    """
    lengths = embedder.count_tokens([c.text for c in chunks]) if chunks else []
    return {"chunks": len(lengths), "over": sum(n >= embedder.max_tokens for n in lengths),
            "limit": embedder.max_tokens}

# What each of `diagnose`'s verdicts means, for the line that prints one.
DIAGNOSIS = {"ok": "the top k hold all the gold",
             "split": "no chunk holds a whole gold span: the chunker cut it, and the top k "
                      "miss part of it",
             "missed": "a chunk holds the gold whole, but none touching the gold is in the top k",
             "partial": "a chunk holds the gold whole and one touching it is in the top k, but "
                        "the top k hold only part of the gold"}


def diagnose(query: Query, chunks: Sequence[Chunk], hits: Sequence[Hit], k: int) -> dict:
    """Why did this query succeed or fail? Computed from spans, per the module docstring.
    ``gold_pieces`` is `gold_pieces` of the most cut gold span."""
    top = [h.chunk for h in hits[:k]]
    pieces = [gold_pieces(g, chunks) for g in query.gold]
    whole = all(any(c.start <= g.start and g.end <= c.end for c in chunks_touching(g, chunks))
                for g in query.gold)
    ranks = [i + 1 for i, h in enumerate(hits) if overlaps(h.chunk, query.gold, query.copies)]
    coverage = (sum(covered_fraction(g, top) * len(g) for g in query.gold)
                / max(1, sum(len(g) for g in query.gold)))
    if coverage >= 1.0:
        verdict = "ok"
    elif not whole:
        verdict = "split"
    elif not ranks or ranks[0] > k:
        verdict = "missed"
    else:
        verdict = "partial"
    return {"query_id": query.id, "gold_pieces": max(pieces) if pieces else 0,
            "gold_in_one_chunk": whole, "first_relevant_rank": ranks[0] if ranks else None,
            "top_k_coverage": round(coverage, 3), "verdict": verdict}


def hits_text(query: Query, hits: Sequence[Hit], k: int = 3, lines: int | None = None,
              ranks: Sequence[int] | None = None) -> str:
    """The top k hits (or the hits at `ranks`, counted from 1) as plain text: a header line per
    hit (rank, doc, characters, score, whether it holds gold), its prefix if any, then its body
    with the gold between ``⟦`` and ``⟧``. With `lines`, each body shows at most that many of
    its non-blank lines (`clip_lines`: the gold's lines and their neighbours first, else the
    first lines) and the header says how many it shows; without, the body in full."""
    out = []
    for i in ([r - 1 for r in ranks if 0 < r <= len(hits)] if ranks else range(min(k, len(hits)))):
        h = hits[i]
        c = h.chunk
        gold = [g for g in query.gold if g.doc_id == c.doc_id]
        tag = "holds gold" if overlaps(c, query.gold, query.copies) else "no gold"
        body, shown = _marked_text(c.text, c.start, gold), ""
        if lines is not None:
            body, kept, total = clip_lines(body, lines)
            shown = f" · {kept} of {total} lines shown" if kept < total else ""
        out.append(f"── #{i + 1} {c.doc_id} chars {c.start}–{c.end} · score {h.score:.3f} · "
                   f"{tag}{shown}")
        if c.prefix:
            out.append(f"[prefix] {c.prefix}")
        out.append(body)
    return "\n".join(out)


def clip_lines(text: str, limit: int, focus: str | None = None) -> tuple[str, int, int]:
    """(at most `limit` of `text`'s non-blank lines, how many that is, how many there are).
    The lines that hold gold (between ``⟦`` and ``⟧``), or match the regular expression
    `focus`, come first, then the lines nearest them (the line after before the line before);
    text with neither keeps its first lines. A gap between kept lines is one ``…`` line; more
    focus lines than `limit` keep the first and the last of them.

    >>> print(clip_lines("a\\n\\nb\\nc ⟦gold\\nd⟧\\ne\\nf\\ng", 3)[0])
    c ⟦gold
    d⟧
    e
    >>> clip_lines("a\\nb\\nc", 2)
    ('a\\nb', 2, 3)
    >>> print(clip_lines("| Plan | days |\\n|---|---|\\n| Basic | 7 |\\n| Gold | 10 |", 2,
    ...                  focus=r"Gold|\\| Plan")[0])
    | Plan | days |
    …
    | Gold | 10 |
    """
    import re

    rows = [line for line in text.split("\n") if line.strip()]
    if len(rows) <= limit:
        return "\n".join(rows), len(rows), len(rows)
    marked, inside = [], False
    for i, line in enumerate(rows):
        if inside or GOLD_OPEN in line or (focus and re.search(focus, line)):
            marked.append(i)
        opened, closed = line.rfind(GOLD_OPEN), line.rfind(GOLD_CLOSE)
        inside = opened > closed if opened >= 0 or closed >= 0 else inside
    if len(marked) > limit:
        keep = set(marked[:(limit + 1) // 2] + marked[len(marked) - limit // 2:])
    elif marked:
        near = sorted(range(len(rows)), key=lambda i: (min(abs(i - m) for m in marked),
                                                       not any(i > m for m in marked), i))
        keep = set(near[:limit])
    else:
        keep = set(range(limit))
    out, last = [], None
    for i in sorted(keep):
        if last is not None and i > last + 1:
            out.append("…")
        out.append(rows[i])
        last = i
    return "\n".join(out), len(keep), len(rows)


_COLORS = ("#e8f0fe", "#fef3e0")
GOLD_OPEN, GOLD_CLOSE = "⟦", "⟧"


def chunk_view(doc: Document, chunks: Sequence[Chunk], span: Span, context: int = 0,
               fmt: str = "html") -> str:
    """Every chunk of `doc` that touches `span`, whole, in document order, each with its
    boundaries and whether it holds all the gold; the gold highlighted (bold red in HTML,
    between ``⟦ ⟧`` in text). `context` adds that many characters of the document before
    the first and after the last chunk, greyed (the text no chunk shown here holds).

    Overlapping chunks (e.g. 1000/200) are drawn as their own rows so every cut is visible.

    >>> d = Document("d", "Tier | window\\nGold | 14 days\\nSilver | 30 days")
    >>> cs = [Chunk.make(d, 0, 14, "t"), Chunk.make(d, 14, 45, "t")]
    >>> print(chunk_view(d, cs, Span("d", 14, 28), fmt="text"))
    ── chunk 2 of 2: chars 14–45 · holds all the gold
    ⟦Gold | 14 days⟧
    Silver | 30 days
    """
    if fmt not in ("html", "text"):
        raise ValueError(f"fmt must be 'html' or 'text', not {fmt!r}")
    ordered = sorted((c for c in chunks if c.doc_id == doc.id), key=lambda c: (c.start, c.end))
    near = [(n, c) for n, c in enumerate(ordered) if intersect(c.span, (span.start, span.end))]
    if not near:
        lo, hi = max(0, span.start - context), min(len(doc.text), span.end + context)
        note = "no chunk holds any of the gold"
        if fmt == "text":
            return f"── {note}\n" + _marked_text(doc.text[lo:hi], lo, [span])
        return (f"<div style='font:11px sans-serif;color:#555'>{note}</div><pre style='white-space:"
                f"pre-wrap;margin:0;font-size:12px'>{_mark(doc.text, lo, hi, span)}</pre>")
    rows = []
    for n, c in near:
        whole = c.start <= span.start and span.end <= c.end
        label = (f"chunk {n + 1} of {len(ordered)}: chars {c.start}–{c.end}"
                 + (" · holds all the gold" if whole else " · holds part of the gold"))
        before = doc.text[max(0, c.start - context):c.start] if context else ""
        after = doc.text[c.end:c.end + context] if context else ""
        if fmt == "text":
            body = _marked_text(c.text, c.start, [span])
            rows.append(f"── {label}\n" + (f"…{before}|" if before else "") + body
                        + (f"|{after}…" if after else ""))
            continue
        prefix = (f"<div style='color:#666;font-style:italic'>{html.escape(c.prefix)}</div>"
                  if c.prefix else "")
        rows.append(
            f"<div style='margin:4px 0'><div style='font:11px sans-serif;color:#555'>{label}"
            f"</div>{prefix}<pre style='white-space:pre-wrap;margin:0;font-size:12px'>"
            f"<span style='color:#bbb'>{html.escape(before)}</span><span style='background:"
            f"{_COLORS[n % 2]}'>{_mark(doc.text, c.start, c.end, span)}</span>"
            f"<span style='color:#bbb'>{html.escape(after)}</span></pre></div>")
    return "\n".join(rows) if fmt == "text" else "".join(rows)


def _marked_text(text: str, offset: int, spans: Sequence[Span]) -> str:
    """`text` (which starts at document offset `offset`) with each span between ⟦ and ⟧."""
    cuts = sorted((max(0, g.start - offset), min(len(text), g.end - offset)) for g in spans)
    out, at = [], 0
    for a, b in cuts:
        if b <= a or b <= at:
            continue
        a = max(a, at)
        out += [text[at:a], GOLD_OPEN, text[a:b], GOLD_CLOSE]
        at = b
    return "".join(out + [text[at:]])


def _mark(text: str, s: int, e: int, span: Span) -> str:
    a, b = max(s, span.start), min(e, span.end)
    if a >= b:
        return html.escape(text[s:e])
    return (html.escape(text[s:a]) + "<b style='color:#b00020'>" + html.escape(text[a:b])
            + "</b>" + html.escape(text[b:e]))


def staged_status(verdicts: Mapping[str, Mapping[str, str]], naive: str,
                  order: Sequence[str] | None = None) -> list[dict]:
    """One status per staged case from `verdicts[case][strategy]` (``diagnose``'s verdict):
    ``does not fail naively`` when the `naive` strategy is already ``ok``; ``fixed by X, Y``
    listing, in `order`, the strategies that get it ``ok``; otherwise ``not fixed``.

    >>> staged_status({"a": {"naive": "split", "structure": "ok"},
    ...                "b": {"naive": "missed", "structure": "partial"},
    ...                "c": {"naive": "ok", "structure": "ok"}}, naive="naive")[1]["status"]
    'not fixed'
    """
    rows = []
    for case, by in verdicts.items():
        if naive not in by:
            raise KeyError(f"case {case!r} has no verdict for the naive strategy {naive!r}")
        others = [s for s in (order or by) if s != naive and s in by]
        fixed = [s for s in others if by[s] == "ok"]
        if by[naive] == "ok":
            status = "does not fail naively"
        elif fixed:
            status = "fixed by " + ", ".join(fixed)
        else:
            status = "not fixed"
        rows.append({"case": case, "naive": by[naive], **{s: by[s] for s in others},
                     "status": status})
    return rows


def score_views(query: Query, hits: Sequence[Hit], k: int = 5,
                budgets: Sequence[int] = (256, 1024), texts: Mapping[str, str] | None = None):
    """One row per view of the same ranking: ``top k`` (the k chunks, whatever their size)
    and ``B tokens`` (hits packed in rank order into B cl100k tokens, overlaps once, the last
    hit cut): tokens that reach the model, span recall / precision / IoU, and pass (share of
    the gold units wholly inside)."""
    import pandas as pd

    ranked = [h.chunk for h in hits]
    top = ranked[:k]
    fixed = query_scores(query, top, k, texts=texts)
    rows = [{"view": f"top {k} chunks", "chunks": len(top),
             "cl100k tokens": sum(count_tokens(c.text) + count_tokens(c.prefix) for c in top),
             "recall": fixed["recall"], "precision": fixed["precision"], "iou": fixed["iou"],
             "pass": fixed["pass@k"]}]
    for b in budgets:
        packed = pack_context(ranked, b)
        sc = budget_scores(query, packed, texts)
        rows.append({"view": f"{b} tokens", "chunks": packed.units,
                     "cl100k tokens": packed.tokens,
                     "recall": sc["recall"], "precision": sc["precision"], "iou": sc["iou"],
                     "pass": sc["pass"]})
    return pd.DataFrame(rows)


def views_differ(query: Query, hits: Sequence[Hit], k: int = 5, budget: int = 256,
                 texts: Mapping[str, str] | None = None) -> bool:
    """Whether the top `k` and a `budget`-token context hold different shares of the gold
    (span recall): a question on which the two views of `score_views` disagree."""
    v = score_views(query, hits, k=k, budgets=(budget,), texts=texts)
    return bool(v.recall.iloc[0] != v.recall.iloc[1])



def view_orders(queries: Sequence[Query], a, b, k: int = 5, budget: int = 1024):
    """Per question with gold, span recall of run `a` minus run `b` (outcomes with ``hits`` and
    ``texts``) in the top `k` (``at_k``) and in a `budget`-token context (``at_budget``)."""
    import pandas as pd

    rows = []
    for q in (q for q in queries if q.gold):
        va, vb = (score_views(q, o.hits[q.id], k=k, budgets=(budget,), texts=o.texts).recall
                  for o in (a, b))
        rows.append({"query_id": q.id, "at_k": float(va.iloc[0] - vb.iloc[0]),
                     "at_budget": float(va.iloc[1] - vb.iloc[1])})
    return pd.DataFrame(rows, columns=["query_id", "at_k", "at_budget"])


def order_flips(queries: Sequence[Query], a, b, k: int = 5,
                budget: int = 1024) -> list[tuple[str, float, float]]:
    """The questions on which two runs change order between the views (`view_orders`): one
    strictly ahead in the top `k`, the other strictly ahead at the budget; a tie in either view
    is no change. Each as (id, a − b in the top k, a − b at the budget)."""
    d = view_orders(queries, a, b, k, budget)
    return [(r.query_id, r.at_k, r.at_budget) for r in d.itertuples() if r.at_k * r.at_budget < 0]


def views_reason(query: Query, hits: Sequence[Hit], k: int = 5, budget: int = 256,
                 texts: Mapping[str, str] | None = None) -> str:
    """Why the top `k` and a `budget`-token context hold different shares of `query`'s gold,
    read off the same rows as `hits_table`: which ranks hold gold characters, how far down the
    ranking the context reaches, and the tokens of the hits above the first gold hit."""
    v = score_views(query, hits, k=k, budgets=(budget,), texts=texts).set_index("view")
    top, ctx = v.iloc[0], v.iloc[1]
    ranked = [h.chunk for h in hits]
    packed = pack_context(ranked, budget)
    gold = [i + 1 for i, c in enumerate(ranked[:max(k, packed.examined)])
            if any(intersect(c.span, g.span) for g in query.gold if g.doc_id == c.doc_id)]
    tokens = [count_tokens(c.text) + count_tokens(c.prefix) for c in ranked]
    reach = (f"the {budget:,}-token context reaches rank {packed.examined}"
             + (" and cuts that hit at the budget" if packed.cut else ""))
    in_top = [r for r in gold if r <= k]
    where = (f"gold characters lie in the hits at rank {', '.join(map(str, gold))}"
             if gold else "no hit it reads holds gold characters")
    if top.recall > ctx.recall and in_top:
        first = in_top[0]
        why = ((f"the hits above rank {first} take {sum(tokens[:first - 1]):,} tokens, more "
                f"than {budget:,}, so the context never reaches the first gold hit"
                if packed.examined < first else
                "so the gold after that cut, and at any rank below it, stays out")
               + f"; the top {k} take {k} whole chunks ({int(top['cl100k tokens']):,} tokens) whatever "
               "their size, so they hold more")
    elif ctx.recall > top.recall:
        beyond = [r for r in gold if k < r <= packed.examined]
        why = (f"the top {k} chunks use only {int(top['cl100k tokens']):,} tokens, so the context reads "
               f"past rank {k}" + (f" to the gold at rank {', '.join(map(str, beyond))}"
                                   if beyond else "") + ", and holds more")
    else:
        why = ("both hold the same gold characters" if top.recall == ctx.recall
               else f"the top {k} hold more")
    return (f"Span recall {top.recall:.0%} in the top {k}, {ctx.recall:.0%} in {budget:,} "
            f"tokens: {where}; {reach}" + (", " if why.startswith("so ") else "; ") + f"{why}.")


def hits_table(query: Query, hits: Sequence[Hit], k: int = 5,
               budgets: Sequence[int] = (256, 1024), scores: bool = False):
    """Every hit any of `score_views`' views reads, one row each: its rank, place, (with
    `scores`) the retriever's score, cl100k tokens (prefix included), the gold characters it
    holds, and whether it is in the top k and in each budget's context (``cut`` when the
    context ends inside it), so each view's numbers can be traced to the hits behind them."""
    import pandas as pd

    ranked = [h.chunk for h in hits]
    packs = {b: pack_context(ranked, b) for b in budgets}
    depth = max([k, *(p.examined for p in packs.values())])
    rows = []
    for i, c in enumerate(ranked[:depth]):
        held = sum(x[1] - x[0] for g in query.gold if g.doc_id == c.doc_id
                   for x in [intersect(c.span, g.span)] if x)
        row = {"rank": i + 1, "chunk": f"{c.doc_id} [{c.start}:{c.end}]",
               **({"score": round(hits[i].score, 3)} if scores else {}),
               "cl100k tokens": count_tokens(c.text) + count_tokens(c.prefix),
               "gold chars held": held, f"in top {k}": "yes" if i < k else "no"}
        for b, p in packs.items():
            inside = [e - s for d, s, e in p.spans if d == c.doc_id and s < c.end and c.start < e]
            whole = sum(inside) >= c.end - c.start
            row[f"in {b} tokens"] = ("no" if i >= p.examined or not inside else
                                     "yes" if whole else "cut")
        rows.append(row)
    return pd.DataFrame(rows)


def staged_case_html(case: Mapping, query: Query, docs: Mapping[str, Document],
                     chunks: Sequence[Chunk], runs: Mapping[str, Sequence[Hit]], k: int = 3,
                     splitter: str = "") -> str:
    """One staged failure in full, as HTML: the question and its expected answer, the case's
    staged explanation (``description`` in ``staged_failures.json``), every chunk of `chunks`
    that touches each gold span (whole, boundaries marked, gold highlighted: `chunk_view`
    without context), and, for each retriever in `runs` (name -> ranked hits), its top `k`
    in full (`hits_text`)."""
    esc = html.escape
    parts = [f"<h3>{esc(case['name'].replace('_', ' '))}</h3>",
             f"<p><b>Q ({esc(query.id)}):</b> {esc(query.text)}<br><b>Expected:</b> "
             f"{esc(query.answer or '')}" + (f"<br><i>splitter: {esc(splitter)}</i>"
                                             if splitter else "") + "</p>",
             f"<blockquote style='color:#444'><b>Why it was staged:</b> "
             f"{esc(case.get('description', ''))}</blockquote>"]
    for i, g in enumerate(query.gold):
        parts.append(f"<div style='font:12px sans-serif;margin-top:6px'><b>gold span {i + 1} of "
                     f"{len(query.gold)}</b>: {esc(g.doc_id)} chars {g.start}–{g.end}</div>")
        parts.append(chunk_view(docs[g.doc_id], chunks, g) if g.doc_id in docs
                     else "<div>document not in this corpus slice</div>")
    for name, hits in runs.items():
        parts.append(f"<div style='font:12px sans-serif;margin-top:8px'><b>{esc(name)}</b> "
                     f"returned (top {k}, in full; gold between ⟦ ⟧):</div><pre style='white-space:"
                     f"pre-wrap;font-size:12px;margin:0'>{esc(hits_text(query, hits, k=k))}</pre>")
    return "".join(parts)


def gold_ranks(queries: Sequence[Query], hits: Sequence[Sequence[Hit]]):
    """The 1-based rank of the first hit that touches each question's gold (a Series indexed
    by question id), from hits retrieved deep enough to reach it (e.g. every chunk); a hit on
    an identical copy of the gold counts (`ragkit.evaluate.copies`); a question whose gold no
    hit touches gets no rank (NaN). The mechanism demos of notebooks 02
    and 04 read a change of ranking this way."""
    import pandas as pd

    return pd.Series([next((i for i, h in enumerate(hs, 1)
                            if overlaps(h.chunk, q.gold, q.copies)), None)
                      for q, hs in zip(queries, hits)], index=[q.id for q in queries],
                     dtype=float)
