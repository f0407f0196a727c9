"""Bad inputs and fuzzing: every chunker must chunk correctly or say clearly what is wrong.

Readers will point ragkit at messy documents. For each input below and each chunker, the
outcome must be one of two things: chunks that satisfy the invariants (every chunk's text is its
span, every non-whitespace character is covered, chunks are sorted), or a `DocumentError` whose
message starts with ``path:line:``. Anything else — a crash, a lost character, a wrong offset —
is a failure.

The inputs are generated, not stored: an empty file, only headings, one 10 MB line (1 MB in the
test suite), bytes that are not UTF-8, CRLF endings, tabs and non-breaking spaces, ragged
tables and tables without a separator row, lists nested six deep, ``#`` lines inside fenced
code, HTML blocks, front matter with wrong types, duplicate headings, one sentence repeated
10,000 times.

For late chunking, one more input: a Markdown document of a million MiniLM tokens
(`million_token_text`). Each chunker's chunks of it must map onto the document's tokens as late
chunking needs (`late_input`): one token range per chunk, every token in a chunk, windows that
supply every token exactly once. ``--late-forward`` also embeds it, chunk vectors and all, and
prints the peak memory.

    python -m ragkit.robustness              # bad inputs x chunkers, then 10 min of fuzzing
    python -m ragkit.robustness --fuzz-seconds 30
    python -m ragkit.robustness --fuzz-seconds 30 --late-forward   # + embed the 1M tokens

prints, per chunker, how many inputs and fuzz examples were tried and how many failed.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .documents import DocumentError, load_document
from .types import Document


@dataclass(frozen=True)
class BadInput:
    name: str
    filename: str
    make: Callable[[], bytes]


def _words(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    vocab = ["refund", "window", "gold", "tier", "days", "policy", "the", "of", "claim", "fee"]
    return " ".join(rng.choice(vocab) for _ in range(n))


def bad_inputs(big_line_mb: float = 10) -> list[BadInput]:
    """The bad-input suite (see the module docstring); `big_line_mb` sizes the long line."""
    n_words = int(big_line_mb * 1_000_000 / 5.3)
    nested = "\n".join("  " * d + f"- level {d + 1} item" for d in range(6))
    return [
        BadInput("empty", "empty.md", lambda: b""),
        BadInput("only_headings", "headings.md",
                 lambda: b"# One\n\n## Two\n\n### Three\n\n#### Four\n"),
        BadInput("one_long_line", "long.md", lambda: _words(n_words).encode()),
        BadInput("not_utf8", "latin1.md", lambda: "Caf\xe9 prices\n".encode("latin-1")),
        BadInput("crlf", "crlf.md",
                 lambda: b"# Title\r\n\r\nFirst para.\r\nSame para.\r\n\r\n| a | b |\r\n"
                         b"|---|---|\r\n| 1 | 2 |\r\n"),
        BadInput("tabs_nbsp", "spaces.md",
                 lambda: "# T\u00a0itle\n\n\tIndented\ttabbed text.\n\nNo\u00a0break\u00a0"
                         "spaces\u2003here.\n".encode()),
        BadInput("ragged_table", "ragged.md",
                 lambda: b"| a | b | c |\n|---|---|\n| 1 |\n| 1 | 2 | 3 | 4 |\n"),
        BadInput("table_no_separator", "nosep.md",
                 lambda: b"| Tier | Window |\n| Gold | 14 days |\n| Silver | 7 days |\n"),
        BadInput("nested_lists", "nested.md", lambda: (nested + "\n").encode()),
        BadInput("hash_in_fence", "fence.md",
                 lambda: b"# Real\n\n```bash\n# not a heading\n## nor this\necho hi\n```\n"
                         b"\nAfter.\n"),
        BadInput("html_blocks", "html.md",
                 lambda: b"# T\n\n<div class='x'>\n<p>inside html</p>\n</div>\n\n<table>"
                         b"<tr><td>cell</td></tr></table>\n\ntext\n"),
        BadInput("front_matter_wrong_types", "types.md",
                 lambda: b"---\ndoc_id: [1, 2]\neffective_date: yesterday\n---\nbody\n"),
        BadInput("front_matter_not_mapping", "list.md", lambda: b"---\n- a\n---\nbody\n"),
        BadInput("duplicate_headings", "dups.md",
                 lambda: b"# Fees\n\nA.\n\n# Fees\n\nB.\n\n## Fees\n\nC.\n"),
        BadInput("repeated_sentence", "repeat.md",
                 lambda: ("The refund window is fourteen days. " * 10_000).encode()),
    ]


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
    from .late import chunk_token_ranges, plan_windows

    chunks = chunker.chunk(doc)
    check_chunks(doc, chunks)
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


def check_chunks(doc: Document, chunks) -> None:
    """Raise AssertionError if the invariants do not hold."""
    covered = bytearray(len(doc.text))
    last = (-1, -1)
    for c in chunks:
        assert c.doc_id == doc.id, f"chunk of {c.doc_id} in {doc.id}"
        assert doc.text[c.start:c.end] == c.text, f"chunk [{c.start}, {c.end}) is not its span"
        assert (c.start, c.end) >= last, "chunks are not sorted"
        last = (c.start, c.end)
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
    lost = [i for i, ch in enumerate(doc.text) if not covered[i] and not ch.isspace()]
    assert not lost, f"{len(lost)} characters lost, first at offset {lost[0]}"


def run_input(chunker, bad: BadInput, folder: Path) -> str:
    """'ok', 'clear error', or 'FAILED: ...' for one chunker on one bad input."""
    path = folder / bad.filename
    if not path.exists():
        path.write_bytes(bad.make())
    try:
        doc = load_document(path)
    except DocumentError as e:
        return "clear error" if str(e).startswith(f"{path}:") else f"FAILED: unclear error {e}"
    try:
        check_chunks(doc, chunker.chunk(doc))
    except DocumentError as e:
        return "clear error" if ":" in str(e).split(" ")[0] else f"FAILED: unclear error {e}"
    except Exception as e:  # noqa: BLE001 - anything else is a failure to report
        return f"FAILED: {type(e).__name__}: {e}"
    return "ok"


def default_chunkers() -> dict:
    """One instance of every registered chunker, with its default settings."""
    from .chunkers import REGISTRY

    return {name: cls() for name, cls in sorted(REGISTRY.items())}


def uses_model(chunker) -> bool:
    """Chunkers that embed while chunking (semantic ones) get smaller versions of huge inputs."""
    return hasattr(chunker, "embedder")


def fuzz(chunker, seconds: float | None = None, examples: int | None = None, seed: int = 0
         ) -> tuple[int, list[str]]:
    """Random Markdown-like documents through one chunker; (examples tried, failures)."""
    rng = random.Random(seed)
    pieces = ["# ", "## ", "- ", "  - ", "1. ", "| a | b |\n|---|---|\n| ", "```\n# x\n```",
              "\n", "\n\n", "\r\n", "\t", "\u00a0", " ", "word", "Gold", "14 days.", "?", "!",
              "é", "😀", "\x1b", "<div>", "</div>", "---", "> ", "**bold**", "[a]: http://x"]
    deadline = time.time() + seconds if seconds else None
    tried, failures = 0, []
    while (examples is None or tried < examples) and (deadline is None or time.time() < deadline):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 200)))
        doc = Document(f"fuzz{tried}", text)
        try:
            check_chunks(doc, chunker.chunk(doc))
        except Exception as e:  # noqa: BLE001
            failures.append(f"{type(e).__name__}: {e} on {text[:80]!r}")
        tried += 1
    return tried, failures


def late_suite(chunkers: dict, n_tokens: int, forward: bool) -> tuple[list[str], int]:
    """The million-token document through every chunker that does not embed while chunking,
    then (with `forward`) embedded with the fixed 256-token chunks; (report lines, failures)."""
    import resource

    from .late import LateEmbedder

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
        from .chunkers import FixedTokenChunker

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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ragkit.robustness", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fuzz-seconds", type=float, default=600,
                   help="total fuzzing time, shared by the chunkers (default 600)")
    p.add_argument("--big-line-mb", type=float, default=10)
    p.add_argument("--late-tokens", type=int, default=1_000_000,
                   help="size of the late-chunking input in MiniLM tokens (default 1,000,000)")
    p.add_argument("--late-forward", action="store_true",
                   help="also embed the late-chunking input with one chunker and report memory")
    args = p.parse_args(argv)
    chunkers = default_chunkers()
    per = args.fuzz_seconds / max(1, len(chunkers))
    rows, failed = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        big, small = Path(tmp) / "big", Path(tmp) / "small"
        big.mkdir()
        small.mkdir()
        for name, chunker in chunkers.items():
            model = uses_model(chunker)
            inputs = bad_inputs(1 if model else args.big_line_mb)
            outcomes = [run_input(chunker, b, small if model else big) for b in inputs]
            bad = [f"{b.name}: {o}" for b, o in zip(inputs, outcomes) if o.startswith("FAILED")]
            tried, fails = fuzz(chunker, seconds=per)
            failed += len(bad) + len(fails)
            rows.append((name, len(inputs), len(bad), tried, len(fails)))
            for line in bad + fails[:3]:
                print(f"  {name}: {line}")
    late_rows, late_failed = late_suite(chunkers, args.late_tokens, args.late_forward)
    failed += late_failed
    print(f"{'chunker':<18} {'bad inputs':>10} {'failed':>6} {'fuzz examples':>13} {'failed':>6}")
    for r in rows:
        print(f"{r[0]:<18} {r[1]:>10} {r[2]:>6} {r[3]:>13} {r[4]:>6}")
    print(f"\nlate chunking, {args.late_tokens:,}-token document:")
    for line in late_rows:
        print("  " + line)
    late_runs = sum(": ok" in line or "FAILED" in line for line in late_rows)
    print(f"total: {sum(r[1] for r in rows) + late_runs} bad-input runs, "
          f"{sum(r[3] for r in rows)} fuzz examples, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
