"""Lint a chunking: find what a chunker lost, repeated or broke, before retrieval pays for it.

Each check looks at one document and its chunks and returns `Finding`s:

- ``lost_text`` (error): non-whitespace characters that no chunk covers, one finding per run;
- ``duplicated_text`` (warning): non-whitespace characters covered by more than one chunk
  (overlap may be intended, so it is only counted);
- ``table_without_header`` (error): a chunk holds rows of a table but neither its body nor its
  prefix has the table's header row;
- ``heading_only`` (warning): a chunk whose body is nothing but headings;
- ``over_limit`` (error): the embedded text (prefix included) is longer than the encoder takes,
  so the encoder silently drops its end. With an `Embedder` as `tokenizer` the count is the
  encoder's own (special tokens and prompt included) and the limit defaults to its
  ``max_tokens``; with a tokenizer name the limit must be given;
- ``over_cap`` (error): a chunk longer than its own chunker's cap (`chunk_cap`: the hard cap
  of the structure family, prefix included; the size of fixed and recursive splitters), counted
  in the chunker's tokenizer. The structure family may exceed it only with a single table row
  or list item, which it never cuts; the message says so;
- ``empty`` (error): a chunk of whitespace only; ``bad_span`` (error): a chunk whose text is not
  its span of the document.

`summary` totals findings; `lint_corpus` lints every document with one or more chunkers and
returns one row per strategy (a pandas DataFrame).

    >>> from ragkit.types import Chunk, Document
    >>> doc = Document("d", "Alpha beta. Gamma.")
    >>> [f.check for f in lint(doc, [Chunk.make(doc, 0, 11, strategy="x")])]
    ['lost_text']
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping, Sequence

import numpy as np

from ..text.markdown import blocks_for
from ..text.tokens import count_tokens, get_tokenizer
from ..types import Block, Chunk, Document

Level = Literal["error", "warning"]
LEVELS: dict[str, Level] = {
    "lost_text": "error", "duplicated_text": "warning", "table_without_header": "error",
    "heading_only": "warning", "over_limit": "error", "empty": "error", "bad_span": "error",
    "over_cap": "error",
}


@dataclass(frozen=True)
class Finding:
    """One problem: which check, how bad, where, and how much (characters, or tokens for
    ``over_limit``)."""

    check: str
    doc_id: str
    message: str
    chunk_id: str | None = None
    start: int | None = None
    end: int | None = None
    amount: int = 0

    @property
    def level(self) -> Level:
        return LEVELS[self.check]


def _coverage(n: int, chunks: Sequence[Chunk]) -> np.ndarray:
    """How many chunks cover each character."""
    diff = np.zeros(n + 1, dtype=np.int32)
    np.add.at(diff, [min(c.start, n) for c in chunks], 1)
    np.add.at(diff, [min(c.end, n) for c in chunks], -1)
    return np.cumsum(diff)[:n]


def _token_counts(texts: list[str], tokenizer: Any) -> list[int]:
    if hasattr(tokenizer, "count_tokens"):  # an Embedder: the encoder's own count
        return list(tokenizer.count_tokens(texts))
    tok = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    return [count_tokens(t, tok) for t in texts]


def lint(doc: Document, chunks: Sequence[Chunk], max_tokens: int | None = None,
         tokenizer: Any = "minilm") -> list[Finding]:
    """Findings for one document's chunks (see the module docstring for the checks)."""
    text, out = doc.text, []
    for c in chunks:
        if text[c.start:c.end] != c.text:
            out.append(Finding("bad_span", doc.id, f"{doc.where(c.start)}: chunk text differs "
                               f"from its span [{c.start}, {c.end})", c.id, c.start, c.end))
        elif not c.text.strip():
            out.append(Finding("empty", doc.id, f"{doc.where(c.start)}: empty chunk", c.id,
                               c.start, c.end))
    solid = np.fromiter((not ch.isspace() for ch in text), dtype=bool, count=len(text))
    cov = _coverage(len(text), chunks)
    lost = (cov == 0) & solid
    if lost.any():
        idx = np.flatnonzero(cov == 0)
        breaks = np.flatnonzero(np.diff(idx) > 1)
        for a, b in zip([0, *(breaks + 1)], [*(breaks + 1), len(idx)]):
            s, e = int(idx[a]), int(idx[b - 1]) + 1
            k = int(lost[s:e].sum())
            if k:  # located by its first and last lost non-whitespace character
                solid_at = np.flatnonzero(lost[s:e])
                s, e = s + int(solid_at[0]), s + int(solid_at[-1]) + 1
                out.append(Finding("lost_text", doc.id, f"{doc.where(s)}: {k} characters in no "
                                   f"chunk: {text[s:e].strip()[:60]!r}", None, s, e, k))
    dup = int(((cov > 1) & solid).sum())
    if dup:
        first = int(np.flatnonzero((cov > 1) & solid)[0])
        out.append(Finding("duplicated_text", doc.id, f"{doc.where(first)}: {dup} characters "
                           "are in more than one chunk", None, first, None, dup))
    if doc.metadata.get("format", "markdown") == "markdown" and chunks:
        out.extend(_structure_findings(doc, blocks_for(doc), chunks))
    if max_tokens is None and hasattr(tokenizer, "count_tokens"):
        max_tokens = int(tokenizer.max_tokens)
    if max_tokens is not None and chunks:
        for c, n in zip(chunks, _token_counts([c.embedding_text() for c in chunks], tokenizer)):
            if n > max_tokens:
                out.append(Finding("over_limit", doc.id, f"{doc.where(c.start)}: {n} tokens "
                                   f"(prefix included) > limit {max_tokens}", c.id, c.start,
                                   c.end, n))
    return out


def chunk_cap(chunker: Any, doc: Document | None = None) -> tuple[str, int, bool] | None:
    """(tokenizer, cap, prefix counted) a chunker promises for its chunks, or None when it
    promises none (sentence groups keep a long sentence whole). A router's cap is that of the
    chunker it picks for `doc`. Fixed token windows promise `size` tokens of the document's
    own tokenisation (a window re-tokenised alone can take a BPE token more), so their chunks
    are counted in context (`cap_findings`)."""
    from .code import CodeChunker
    from .fixed import FixedCharChunker, FixedTokenChunker
    from .recursive import RecursiveChunker
    from .router import Router
    from .semantic import ClusterSemanticChunker, SemanticChunker
    from .structure import StructureChunker

    if isinstance(chunker, Router):
        return chunk_cap(chunker.chunker_for(doc)[1]) if doc is not None else None
    if isinstance(chunker, (StructureChunker, SemanticChunker)):
        return chunker.tokenizer, chunker.hard, True
    if isinstance(chunker, ClusterSemanticChunker):
        return chunker.tokenizer, chunker.max_chunk_size, False
    if isinstance(chunker, (FixedTokenChunker, RecursiveChunker)):
        return chunker.tokenizer, chunker.size, False
    if isinstance(chunker, FixedCharChunker):
        return "chars", chunker.size, False
    if isinstance(chunker, CodeChunker):  # a token cap when set, else size + overlap characters
        if chunker.max_tokens:
            return chunker.tokenizer, chunker.max_tokens, True
        return "chars", chunker.size + chunker.overlap, False
    return None


def atomic_unit(doc: Document, chunk: Chunk) -> str | None:
    """'table row' or 'list item' when the chunk lies inside one row of a table (the first
    with the header) or one item of a list (units the structure chunkers never cut), else
    None."""
    if doc.metadata.get("format", "markdown") != "markdown":
        return None
    for b in blocks_for(doc):
        if b.end <= chunk.start or b.start >= chunk.end:
            continue
        for key, what in (("rows", "table row"), ("items", "list item")):
            spans = list(b.meta.get(key) or [])
            if key == "rows" and len(spans) > 1:  # the header goes with the first row
                spans.append((spans[0][0], spans[1][1]))
            for s, e in spans:
                if s <= chunk.start and chunk.end <= e:
                    return what
    return None


def cap_findings(doc: Document, chunks: Sequence[Chunk], chunker: Any) -> list[Finding]:
    """``over_cap`` findings: chunks longer than their chunker's own cap (see `chunk_cap`)."""
    cap = chunk_cap(chunker, doc)
    if cap is None or not chunks:
        return []
    from .fixed import FixedTokenChunker

    name, limit, with_prefix = cap
    tok = get_tokenizer(name)
    starts = None
    if isinstance(chunker, FixedTokenChunker):  # windows of the document's own tokens;
        # byte-level tokens of one character share its offset: a window may end between them
        starts = sorted({a for a, _ in tok.spans(doc.text)})
    out = []
    for c in chunks:
        if starts is not None:
            n = bisect.bisect_left(starts, c.end) - bisect.bisect_left(starts, c.start)
        else:
            n = count_tokens(c.embedding_text() if with_prefix else c.text, tok)
        if n > limit:
            unit = atomic_unit(doc, c) if with_prefix else None
            why = f" (one {unit}, which is never cut)" if unit else ""
            out.append(Finding("over_cap", doc.id, f"{doc.where(c.start)}: {n} {name} tokens"
                               f"{' (prefix included)' if with_prefix else ''} > the "
                               f"chunker's cap {limit}{why}", c.id, c.start, c.end, n))
    return out


def _structure_findings(doc: Document, blocks: list[Block],
                        chunks: Sequence[Chunk]) -> list[Finding]:
    out = []
    starts = [b.start for b in blocks]
    for c in chunks:
        lo = max(bisect.bisect_right(starts, c.start) - 1, 0)
        hi = bisect.bisect_left(starts, c.end)
        inside = [b for b in blocks[lo:hi] if b.start < c.end and b.end > c.start]
        if inside and all(b.kind == "heading" for b in inside):
            out.append(Finding("heading_only", doc.id, f"{doc.where(c.start)}: chunk is only "
                               f"headings: {c.text[:60]!r}", c.id, c.start, c.end))
        for b in inside:
            rows = b.meta.get("rows") or []
            if b.kind != "table" or len(rows) < 2:
                continue
            if not any(s < c.end and e > c.start for s, e in rows[1:]):
                continue
            hs, he = rows[0]
            header = doc.text[hs:he].strip()
            if not (c.start <= hs and c.end >= he) and header not in c.prefix:
                out.append(Finding("table_without_header", doc.id, f"{doc.where(c.start)}: "
                                   f"table rows without their header {header[:40]!r}", c.id,
                                   c.start, c.end))
    return out


def summary(findings: Iterable[Finding]) -> dict[str, int]:
    """Totals: errors, warnings, characters lost and duplicated, and a count per other check."""
    out = {"errors": 0, "warnings": 0, "lost_chars": 0, "duplicated_chars": 0,
           "tables_without_header": 0, "heading_only": 0, "over_limit": 0, "over_cap": 0,
           "empty": 0, "bad_span": 0}
    names = {"table_without_header": "tables_without_header"}
    for f in findings:
        out["errors" if f.level == "error" else "warnings"] += 1
        if f.check == "lost_text":
            out["lost_chars"] += f.amount
        elif f.check == "duplicated_text":
            out["duplicated_chars"] += f.amount
        else:
            out[names.get(f.check, f.check)] += 1
    return out


# `summary`'s columns by check (the others are named as their check)
COLUMNS = {"lost_text": "lost_chars", "duplicated_text": "duplicated_chars",
           "table_without_header": "tables_without_header"}


def lint_reading(frame) -> str:
    """One line from `lint_corpus`'s frame: each strategy's non-zero findings, errors before
    warnings (`LEVELS`), or "none".

    >>> import pandas as pd
    >>> lint_reading(pd.DataFrame([{"strategy": "a", "lost_chars": 0, "heading_only": 2,
    ...                             "over_limit": 1}, {"strategy": "b", "lost_chars": 0,
    ...                             "heading_only": 0, "over_limit": 0}]))
    'a: 1 over_limit (error), 2 heading_only (warning); b: none'
    """
    order = sorted(LEVELS, key=lambda c: LEVELS[c] != "error")  # errors first, stable
    cols = [(COLUMNS.get(c, c), LEVELS[c]) for c in order]
    return "; ".join(
        f"{r['strategy']}: " + (", ".join(f"{int(r[c]):,} {c} ({level})" for c, level in cols
                                          if c in r and r[c]) or "none")
        for _, r in frame.iterrows())


def lint_corpus(docs: Iterable[Document], chunker: Any, max_tokens: int | None = None,
                tokenizer: Any = "minilm", caps: bool = True):
    """One row per chunker (a chunker, a list of them, or a dict name -> chunker): documents,
    chunks, the `summary` totals, and lost / duplicated text as a percentage of all
    non-whitespace characters. With `caps`, each chunker's own cap is checked too
    (`cap_findings`)."""
    import pandas as pd

    docs = list(docs)
    if isinstance(chunker, Mapping):
        chunkers = list(chunker.items())
    elif isinstance(chunker, (list, tuple)):
        chunkers = [(c.label, c) for c in chunker]
    else:
        chunkers = [(chunker.label, chunker)]
    solid = sum(len(d.text) - sum(ch.isspace() for ch in d.text) for d in docs)
    rows = []
    for name, ch in chunkers:
        findings: list[Finding] = []
        n_chunks = 0
        for d in docs:
            chunks = ch.chunk(d)
            n_chunks += len(chunks)
            findings.extend(lint(d, chunks, max_tokens=max_tokens, tokenizer=tokenizer))
            if caps:
                findings.extend(cap_findings(d, chunks, ch))
        s = summary(findings)
        rows.append({"strategy": name, "docs": len(docs), "chunks": n_chunks, **s,
                     "lost_pct": 100 * s["lost_chars"] / max(solid, 1),
                     "duplicated_pct": 100 * s["duplicated_chars"] / max(solid, 1)})
    return pd.DataFrame(rows)
