"""Late chunking on a document of a million tokens: every chunker's chunks must map onto the
document's tokens as late chunking needs (one token range per chunk, every token in a chunk,
windows that supply every token exactly once); with ``forward``, embedded too, peak memory shown.
"""

from __future__ import annotations

import random
import time

from ...types import Document, check_chunks
from .inputs import uses_model


_LATE_VOCAB = ("refund window gold tier days policy claim fee invoice customer renewal notice "
               "period contract annex clause region effective superseded schedule").split()


def million_token_text(tokens: int = 1_000_000, seed: int = 0) -> str:
    """A Markdown document of at least `tokens` MiniLM tokens: headed sections of paragraphs.

    Every word, heading mark and full stop is at least one MiniLM token, so the count is a
    lower bound known without tokenising (`late_suite` checks it with the tokenizer).
    """
    rng = random.Random(seed)
    parts, count, section = [], 0, 0
    while count < tokens:
        section += 1
        parts.append(f"## Section {section}\n\n")
        count += 3  # "#", "#" and "section" + the number: at least three
        for _ in range(rng.randint(2, 6)):
            words = [rng.choice(_LATE_VOCAB) for _ in range(rng.randint(40, 160))]
            parts.append(" ".join(words) + ".\n\n")
            count += len(words) + 1
    return "".join(parts)


def late_input(chunker, doc: Document, late, tokens=None, forward: bool = False) -> dict:
    """Chunk `doc` and map the chunks onto its tokens as late chunking does; raise if wrong.

    Returns counts (chunks, tokens, windows). `tokens` may be the document's precomputed
    `late.tokenize(doc.text)` (the same for every chunker). With `forward`, the document is
    also embedded and exactly one finite unit vector per chunk is checked.
    """
    from ...embed.late_plan import chunk_token_ranges, plan_windows

    chunks = chunker.chunk(doc)
    check_chunks(doc, chunks, complete=True)
    tokens = tokens if tokens is not None else late.tokenize(doc.text)
    spans = sorted({c.span for c in chunks})
    # chunk_token_ranges and plan_windows check their own invariants (every token in a chunk,
    # each token supplied by exactly one window) and raise if one fails
    r = chunk_token_ranges(doc.text, tokens.starts, tokens.ends, spans)
    n = len(tokens)
    assert len(r.lo) == len(spans), "not one token range per chunk"
    assert r.uncovered_chars == 0, f"{r.uncovered_chars} characters in no chunk"
    wins, _ = plan_windows(n, *late.limits(tokens))
    out = {"chunks": len(chunks), "tokens": n, "windows": len(wins)}
    if forward:
        import numpy as np

        vecs = late.embed([doc], chunks, cache=False)
        assert vecs.shape == (len(chunks), late.embedder.dimension), "not one vector per chunk"
        assert np.all(np.isfinite(vecs)), "a vector is not finite"
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4), "not unit vectors"
    return out


def late_suite(chunkers: dict, n_tokens: int, forward: bool) -> tuple[list[str], int]:
    """The million-token document through every chunker that does not embed while chunking,
    then (with `forward`) embedded with the fixed 256-token chunks; (report lines, failures)."""
    import resource

    from ...embed.late import LateEmbedder

    late = LateEmbedder(cache=False)
    doc = Document("million", million_token_text(n_tokens))
    tokens = late.tokenize(doc.text)
    lines, failed = [], 0
    if len(tokens) < n_tokens:
        return [f"FAILED: the document has {len(tokens):,} tokens, not {n_tokens:,}"], 1
    for name, chunker in chunkers.items():
        if uses_model(chunker):
            lines.append(f"{name}: skipped (embeds every sentence while chunking; its bad-input "
                         "runs use small inputs)")
            continue
        t0 = time.perf_counter()
        try:
            got = late_input(chunker, doc, late, tokens)
            lines.append(f"{name}: ok - {got['chunks']:,} chunks over {got['tokens']:,} tokens, "
                         f"{got['windows']:,} windows ({time.perf_counter() - t0:.1f}s)")
        except Exception as e:  # noqa: BLE001 - report every failure
            failed += 1
            lines.append(f"{name}: FAILED: {type(e).__name__}: {e}")
    if forward:
        from ...chunkers import FixedTokenChunker

        t0 = time.perf_counter()
        try:
            got = late_input(FixedTokenChunker(256, 0, "minilm"), doc, late, tokens, forward=True)
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            lines.append(f"forward (fixed 256 tokens): ok - {got['chunks']:,} vectors, "
                         f"{late.stats['windows']:,} windows, {time.perf_counter() - t0:.0f}s, "
                         f"peak RSS {rss:,.0f} MiB")
        except Exception as e:  # noqa: BLE001
            failed += 1
            lines.append(f"forward: FAILED: {type(e).__name__}: {e}")
    return lines, failed
