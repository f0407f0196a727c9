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

Around the chunkers, the suite tries what a reader touches after the course, in areas
(`AREAS`): ``documents`` (every hostile input x every chunker), ``folders`` (every file loaded
or skipped with its reason and counted), ``golden files`` (malformed variants x JSONL / CSV,
with and without a byte-order mark, CRLF), ``CLI`` (real subprocesses: exit codes, no
traceback), ``caches`` (U+2028 in cached text, bad bytes, unwritable folders, corrupt shards),
``caps`` (documents that crowd a size cap x every chunker that promises one) and
``concurrency`` (processes appending to one results file keep every row).

    ragkit robustness              # every area: a few minutes on 2 CPUs
    ragkit robustness --fuzz-seconds 600 --big-line-mb 10 --late-tokens 1000000
    ragkit robustness --areas "golden files,CLI"
    ragkit robustness --fuzz-seconds 30 --late-tokens 1000000 --late-forward

prints, per area, how many cases were tried and how many failed (and the fuzz examples and
late-chunking runs when asked for). ``python -m ragkit.tools.robustness`` is the same.
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

from ..documents import DocumentError, load_document
from ..types import Document, check_chunks


@dataclass(frozen=True)
class BadInput:
    """A hostile input file; `expect` is "ok" (chunks that satisfy the invariants) or "error"
    (a `DocumentError` naming file and line)."""

    name: str
    filename: str
    make: Callable[[], bytes]
    expect: str = "ok"


def _words(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    vocab = ["refund", "window", "gold", "tier", "days", "policy", "the", "of", "claim", "fee"]
    return " ".join(rng.choice(vocab) for _ in range(n))


def bad_inputs(big_line_mb: float = 10) -> list[BadInput]:
    """The bad-input suite (see the module docstring); `big_line_mb` sizes the long line."""
    n_words = int(big_line_mb * 1_000_000 / 5.3)
    nested = "\n".join("  " * d + f"- level {d + 1} item" for d in range(6))
    return [
        BadInput("empty", "empty.md", lambda: b"", "error"),
        BadInput("only_headings", "headings.md",
                 lambda: b"# One\n\n## Two\n\n### Three\n\n#### Four\n"),
        BadInput("one_long_line", "long.md", lambda: _words(n_words).encode()),
        BadInput("not_utf8", "latin1.md", lambda: "Caf\xe9 prices\n".encode("latin-1"), "error"),
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
                 lambda: b"---\ndoc_id: [1, 2]\neffective_date: yesterday\n---\nbody\n", "error"),
        BadInput("front_matter_not_mapping", "list.md", lambda: b"---\n- a\n---\nbody\n",
                 "error"),
        BadInput("duplicate_headings", "dups.md",
                 lambda: b"# Fees\n\nA.\n\n# Fees\n\nB.\n\n## Fees\n\nC.\n"),
        BadInput("repeated_sentence", "repeat.md",
                 lambda: ("The refund window is fourteen days. " * 10_000).encode()),
        *more_bad_inputs(big_line_mb),
    ]


def more_bad_inputs(big_line_mb: float = 10) -> list[BadInput]:
    """Hostile documents added for issue 19: encodings, line endings, dates, deep nesting, runs
    without spaces, and headings that crowd out their bodies."""
    run = max(1000, int(big_line_mb * 200_000))  # a run without spaces (2 MB at 10)
    deep = "\n".join("  " * d + f"- level {d + 1}" for d in range(50))
    titles = " ".join(["Refund eligibility conditions"] * 30)
    return [
        BadInput("utf16_no_bom", "utf16.md", lambda: "# Fees\n\nGold pays 2%.\n".encode(
            "utf-16-le"), "error"),
        BadInput("utf16_bom", "utf16bom.md",
                 lambda: "# Fees\n\nGold pays 2%.\n".encode("utf-16")),
        BadInput("utf8_bom", "bom.md", lambda: "\ufeff# Fees\n\nGold pays 2%.\n".encode()),
        BadInput("nul_filled", "nul.md", lambda: b"# Fees\n\n" + b"\x00" * 4000, "error"),
        BadInput("binary_png", "image.md",
                 lambda: b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "error"),
        BadInput("cr_only", "cr.md",
                 lambda: b"---\rtitle: Fees\r---\r# Fees\r\rGold pays 2%.\rSilver 3%.\r\r"
                         b"| a | b |\r|---|---|\r| 1 | 2 |\r"),
        BadInput("mixed_line_endings", "mixed.md",
                 lambda: b"# A\r\n\r\nOne.\rTwo.\n\n## B\r\rThree.\n"),
        BadInput("line_separators", "seps.md",
                 lambda: "# Fees\n\nGold\u2028pays\u2029two\u0085percent.\x0bSilver\x0c3%.\n"
                         .encode()),
        BadInput("date_impossible_unquoted", "date1.md",
                 lambda: b"---\neffective_date: 2024-02-30\n---\nbody\n", "error"),
        BadInput("date_impossible_quoted", "date2.md",
                 lambda: b"---\neffective_date: \"2024-13-01\"\n---\nbody\n", "error"),
        BadInput("date_words", "date3.md",
                 lambda: b"---\neffective_date: next tuesday\n---\nbody\n", "error"),
        BadInput("front_matter_unclosed", "open.md",
                 lambda: b"---\ntitle: x\n\n# Body\n\ntext\n", "error"),
        BadInput("only_whitespace", "blank.md", lambda: b" \n\t\n\n  ", "error"),
        BadInput("rtl_combining", "rtl.md",
                 lambda: ("# \u05e9\u05dc\u05d5\u05dd\n\n"
                          "\u0627\u0644\u0639\u0631\u0628\u064a\u0629 "
                          "e\u0301\u0301\u0301 \u202etxet desrever\u202c "
                          "\U0001F468\u200d\U0001F469\u200d\U0001F467. " * 50).encode()),
        BadInput("deep_list_50", "deep.md", lambda: (deep + "\n").encode()),
        BadInput("unclosed_fence", "fence2.md",
                 lambda: b"# Code\n\n```python\n# not a heading\ndef f():\n    return 1\n"
                         + b"x = 1\n" * 500),
        BadInput("run_without_spaces", "run.md",
                 lambda: b"# Blob\n\n" + b"x" * run + b"\n\nAfter the blob.\n"),
        BadInput("empty_headings_120", "headings120.md",
                 lambda: "".join(f"## Heading {i}\n\n" for i in range(120)).encode()
                 + b"Finally some text.\n"),
        BadInput("breadcrumb_near_cap", "crumb.md",
                 lambda: (f"# {titles}\n\n## {titles}\n\n### {titles}\n\n" + "Gold pays "
                          "two percent of the refunded amount. " * 200).encode()),
        BadInput("control_chars", "ctrl.md",
                 lambda: "# T\x01itle\n\nText\x1b[31m red\x7f and \x08back.\n".encode()),
        BadInput("long_heading", "longhead.md",
                 lambda: ("# " + "word " * 3000 + "\n\nBody.\n").encode()),
        BadInput("huge_table_row", "row.md",
                 lambda: ("| a | b |\n|---|---|\n| " + "cell " * 2000 + "| x |\n| 1 | 2 |\n")
                 .encode()),
        BadInput("many_tiny_lines", "lines.md", lambda: b"a\n" * 20_000),
        BadInput("thai_no_spaces", "thai.md",
                 lambda: ("\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22" * 400 + "\n").encode()),
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
    from ..late import chunk_token_ranges, plan_windows

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


def run_input(chunker, bad: BadInput, folder: Path) -> str:
    """'ok', 'clear error', or 'FAILED: ...' for one chunker on one bad input."""
    path = folder / bad.filename
    if not path.exists():
        path.write_bytes(bad.make())
    try:
        doc = load_document(path)
    except DocumentError as e:
        msg = str(e)
        head = msg[len(f"{path}:"):].split(":", 1)[0] if msg.startswith(f"{path}:") else ""
        return "clear error" if head.isdigit() else f"FAILED: unclear error {e}"
    try:
        check_chunks(doc, chunker.chunk(doc), complete=True)
    except DocumentError as e:
        return "clear error" if ":" in str(e).split(" ")[0] else f"FAILED: unclear error {e}"
    except Exception as e:  # noqa: BLE001 - anything else is a failure to report
        return f"FAILED: {type(e).__name__}: {e}"
    return "ok"


def default_chunkers() -> dict:
    """One instance of every registered chunker, with its default settings."""
    from ..chunkers import REGISTRY

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
            check_chunks(doc, chunker.chunk(doc), complete=True)
        except Exception as e:  # noqa: BLE001
            failures.append(f"{type(e).__name__}: {e} on {text[:80]!r}")
        tried += 1
    return tried, failures


def late_suite(chunkers: dict, n_tokens: int, forward: bool) -> tuple[list[str], int]:
    """The million-token document through every chunker that does not embed while chunking,
    then (with `forward`) embedded with the fixed 256-token chunks; (report lines, failures)."""
    import resource

    from ..late import LateEmbedder

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
        from ..chunkers import FixedTokenChunker

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


# --------------------------------------------------------------------------- areas (issue 19)
# Everything a reader touches around the chunkers: folders, golden files, the command line,
# caches, size caps, concurrent runs. Each area returns (cases tried, failure messages); a
# case checks one concrete promise (an exit code, a skipped-and-counted file, a row kept ...).

AREAS = ("documents", "folders", "golden files", "CLI", "caches", "caps", "concurrency")


@dataclass
class Area:
    name: str
    tried: int = 0
    failures: list = None  # type: ignore[assignment]

    def __post_init__(self):
        self.failures = []

    def case(self, label: str, check: Callable[[], None]) -> None:
        """Run one case; anything but a clean return is a failure with its label."""
        self.tried += 1
        try:
            check()
        except Exception as e:  # noqa: BLE001 - every failure is reported, none stops the run
            self.failures.append(f"{label}: {type(e).__name__}: {str(e)[:300]}")


def _expect(cond: bool, msg: str) -> None:
    if not cond:
        raise AssertionError(msg)


# ---- documents: every hostile input x every chunker -------------------------------------

def documents_area(chunkers: dict, big_line_mb: float, folder: Path) -> Area:
    area = Area("documents")
    big, small = folder / "docs-big", folder / "docs-small"
    big.mkdir(exist_ok=True)
    small.mkdir(exist_ok=True)
    inputs_big = bad_inputs(big_line_mb)
    inputs_small = bad_inputs(min(big_line_mb, 0.05))
    for name, chunker in chunkers.items():
        model = uses_model(chunker)
        for bad in (inputs_small if model else inputs_big):
            def check(bad=bad, chunker=chunker, model=model):
                got = run_input(chunker, bad, small if model else big)
                want = "clear error" if bad.expect == "error" else "ok"
                _expect(got == want, f"expected {want}, got {got}")
            area.case(f"{name} x {bad.name}", check)
    return area


# ---- caps: documents that crowd a cap x every chunker that promises one -----------------

def cap_documents(scale: float = 1.0) -> dict[str, Document]:
    """Documents made to break size caps: breadcrumbs near the cap, runs of empty headings,
    runs of characters with no token boundary, long table rows and list items."""
    long_title = " ".join(["Conditions for refund eligibility"] * 25)
    para = "Gold pays two percent of the refunded amount within fourteen days. "
    docs = {
        "crumb_near_cap": f"# {long_title}\n\n## {long_title}\n\n### {long_title}\n\n"
                          + (para * 8 + "\n\n") * int(20 * scale),
        "crumb_title_only": f"# {long_title} {long_title}\n\n" + para * int(100 * scale),
        "run_no_spaces": "# Blob\n\n" + "x" * int(200_000 * scale) + "\n\nAfter.\n",
        "run_in_sentence": "# Blob\n\nThe key is " + "ab" * int(50_000 * scale) + " and more.\n",
        "base64_lines": "# Key\n\n" + "\n".join("QUJDRA" * 40 for _ in range(int(200 * scale))),
        "thai": "# T\n\n" + "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22" * int(2000 * scale),
        "long_row": "| a | b |\n|---|---|\n| " + "cell " * 600 + "| x |\n| 1 | 2 |\n",
        "long_item": "- " + "item text " * 400 + "\n- short\n",
        "deep_sections": "".join(f"{'#' * min(6, 1 + i % 6)} {long_title[:120]} {i}\n\n{para}\n\n"
                                 for i in range(int(60 * scale))),
    }
    for n in (25, 30, 60, 120):
        docs[f"empty_headings_{n}"] = "".join(f"## Heading number {i}\n\n" for i in range(n)) \
            + para + "\n"
        docs[f"empty_headings_{n}_at_end"] = para + "\n\n" + "".join(
            f"### Heading number {i}\n\n" for i in range(n))
    return {k: Document(k, v, {"title": "Refund policy"}) for k, v in docs.items()}


def check_caps(doc: Document, chunks, chunker) -> None:
    """Every chunk within its chunker's cap (a single table row or list item excepted), and no
    explosion into bodies of a character or two."""
    from ..lint import atomic_unit, cap_findings

    check_chunks(doc, chunks, complete=True)
    over = [f for f in cap_findings(doc, chunks, chunker)
            if atomic_unit(doc, next(c for c in chunks if c.id == f.chunk_id)) is None]
    _expect(not over, f"{len(over)} chunk(s) over the cap, first: {over[0].message}"
            if over else "")
    tiny = sum(len(c.text.strip()) <= 2 for c in chunks)
    _expect(tiny <= max(2, len(chunks) // 20), f"{tiny} of {len(chunks)} chunks have bodies "
            "of at most two characters")


def caps_area(chunkers: dict, scale: float = 1.0) -> Area:
    from ..lint import chunk_cap

    area = Area("caps")
    docs = cap_documents(scale)
    small = cap_documents(min(scale, 0.1))
    for name, chunker in chunkers.items():
        for key in docs:
            doc = (small if uses_model(chunker) else docs)[key]
            if chunk_cap(chunker, doc) is None:
                continue
            area.case(f"{name} x {key}",
                      lambda doc=doc, chunker=chunker: check_caps(doc, chunker.chunk(doc),
                                                                  chunker))
    return area


# ---- folders: every file loaded, or skipped with its reason and counted -----------------

GOOD_MD = b"---\ntitle: Good\n---\n# Good\n\nGold pays 2%.\n"


def _folder_cases() -> list[tuple[str, Callable[[Path], None], int, str]]:
    """(name, make(folder), documents expected, text of the one expected problem or "")."""
    import os

    def files(**named: bytes) -> Callable[[Path], None]:
        def make(d: Path) -> None:
            for n, data in named.items():
                (d / n.replace("__", ".")).write_bytes(data)
        return make

    def link(name: str, target: str) -> Callable[[Path], None]:
        return lambda d: os.symlink(target, d / name)

    def both(*makers) -> Callable[[Path], None]:
        def make(d: Path) -> None:
            for m in makers:
                m(d)
        return make

    sidecar = b"path,doc_type,effective_date\n"
    return [
        ("good only", files(), 1, ""),
        ("bad yaml", files(bad__md=b"---\ntitle: [unclosed\n---\nbody\n"), 1, "not valid YAML"),
        ("impossible date", files(d__md=b"---\neffective_date: 2024-02-30\n---\nbody\n"), 1,
         "not a valid date"),
        ("impossible quoted date", files(d__md=b"---\neffective_date: '2023-02-29'\n---\nb\n"),
         1, "not a valid date"),
        ("latin-1", files(l__md="caf\xe9\n".encode("latin-1")), 1, "not valid UTF-8"),
        ("utf-16 without bom", files(u__txt="hello world\n".encode("utf-16-le")), 1, "UTF-16"),
        ("utf-16 with bom", files(u__txt="hello world\n".encode("utf-16")), 2, ""),
        ("nul-filled markdown", files(n__md=b"\x00" * 64), 1, "binary"),
        ("empty file", files(e__md=b""), 1, "empty"),
        ("unclosed front matter", files(o__md=b"---\ntitle: x\nbody\n"), 1, "never closed"),
        ("doc_id a list", files(i__md=b"---\ndoc_id: [1]\n---\nbody\n"), 1, "must be a string"),
        ("duplicate doc_id", files(a__md=b"---\ndoc_id: good\n---\nx\n"), 1, "already used"),
        ("dangling link", link("gone.md", "nowhere.md"), 1, "dangling"),
        ("self loop link", link("loop.md", "loop.md"), 1, "loops"),
        ("folder loop", lambda d: (d / "sub").mkdir() or os.symlink("..", d / "sub" / "up"), 1,
         "loop"),
        ("link to a file", both(files(t__txt=b"target text\n"), link("l.md", "t.txt")), 3, ""),
        ("cr-only endings", files(c__md=b"---\rtitle: CR\r---\r# CR\r\rText.\r"), 2, ""),
        ("pdf ignored", files(x__pdf=b"%PDF-1.4"), 1, ""),
        ("readme skipped", files(README__md=b"# Readme\n"), 1, ""),
        ("sidecar undecodable", files(metadata__csv=b"path,title\nx.py,caf\xe9\n",
                                      x__py=b"x = 1\n"), 2, "not valid UTF-8"),
        ("sidecar bad date", files(metadata__csv=sidecar + b"x.py,code,2024-02-30\n",
                                   x__py=b"x = 1\n"), 1, "not a valid date"),
        ("sidecar short row", files(metadata__csv=sidecar + b"x.py\n", x__py=b"x = 1\n"), 1,
         "fields"),
        ("sidecar with bom", files(metadata__csv=b"\xef\xbb\xbf" + sidecar
                                   + b"x.py,code,2024-02-01\n", x__py=b"x = 1\n"), 2, ""),
        ("sidecar row for a missing file", files(metadata__csv=sidecar + b"y.py,code,\n"), 1,
         "no such file"),
        ("sidecar without path column", files(metadata__csv=b"file,title\nx.py,X\n",
                                              x__py=b"x = 1\n"), 2, "no 'path' column"),
        ("fifo", lambda d: os.mkfifo(d / "pipe.md"), 1, "not a regular file"),
    ]


def _load_with_faults(folder: Path, unreadable: set[str]):
    """load_corpus with reads of the named files or folders failing (as for a file without
    read permission; root ignores permission bits, so the failure is injected)."""
    import os
    from unittest import mock

    from ..documents import load_corpus

    real_read, real_scandir = Path.read_bytes, os.scandir

    def read_bytes(self):
        if self.name in unreadable:
            raise PermissionError(13, "Permission denied", str(self))
        return real_read(self)

    def scandir(path="."):
        if Path(path).name in unreadable:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    with mock.patch.object(Path, "read_bytes", read_bytes), \
            mock.patch("os.scandir", scandir):
        return load_corpus(folder, strict=False)


def folders_area(folder: Path) -> Area:
    from ..documents import DocumentError, load_corpus

    area = Area("folders")
    folder.mkdir(parents=True, exist_ok=True)
    n = 0
    for nested in (False, True):
        for name, make, want_docs, want_error in _folder_cases():
            n += 1
            root = folder / f"f{n}"
            root.mkdir()
            (root / "good.md").write_bytes(GOOD_MD)
            target = root / "nested" if nested and not name.startswith("sidecar") else root
            target.mkdir(exist_ok=True)

            def check(root=root, target=target, make=make, want_docs=want_docs,
                      want_error=want_error):
                make(target)
                corpus = load_corpus(root, strict=False)
                _expect(len(corpus.documents) == want_docs,
                        f"{len(corpus.documents)} documents, expected {want_docs}; "
                        f"errors: {corpus.errors}")
                if want_error:
                    _expect(len(corpus.errors) == 1 and want_error in corpus.errors[0],
                            f"expected one problem with {want_error!r}, got {corpus.errors}")
                    head = corpus.errors[0].split(": ", 1)[0]
                    _expect(head.rsplit(":", 1)[-1].isdigit(),
                            f"problem does not name file:line: {corpus.errors[0]}")
                    try:
                        load_corpus(root, strict=True)
                        raise AssertionError("strict load did not raise")
                    except DocumentError as e:
                        _expect(want_error in str(e), f"strict error lacks the reason: {e}")
                else:
                    _expect(not corpus.errors, f"unexpected problems: {corpus.errors}")
            area.case(f"{'nested ' if nested else ''}{name}", check)
    for what in ("file", "folder"):
        for nested in (False, True):
            n += 1
            root = folder / f"f{n}"
            (root / "sub").mkdir(parents=True)
            (root / "good.md").write_bytes(GOOD_MD)
            where = root / "sub" if nested else root
            (where / "locked.md").write_bytes(b"# Locked\n\ntext\n")
            (where / "lockeddir").mkdir()
            (where / "lockeddir" / "inside.md").write_bytes(b"# Inside\n\ntext\n")

            def check(root=root, what=what):
                name = "locked.md" if what == "file" else "lockeddir"
                corpus = _load_with_faults(root, {name})
                _expect(len(corpus.documents) == 2, f"{len(corpus.documents)} documents")
                _expect(len(corpus.errors) == 1 and "cannot be read" in corpus.errors[0],
                        f"expected one 'cannot be read' problem, got {corpus.errors}")
            area.case(f"unreadable {what}{' (nested)' if nested else ''}", check)
    return area


# ---- golden files: malformed variants x formats -----------------------------------------

GOLDEN_TEXT = ("# Refunds\n\nGold tier: 14 days, fee 2%.\n\nSilver tier: 7 days, fee 5%.\n\n"
               "Bronze tier: no refunds.\n")


def _golden_docs() -> dict[str, Document]:
    t2 = "Support hours: 9 to 5 on weekdays.\u2028Weekend support: none.\n"
    return {"refunds": Document("refunds", GOLDEN_TEXT), "support": Document("support", t2)}


def _span(doc: str, quote: str) -> dict:
    text = _golden_docs()[doc].text
    s = text.index(quote)
    return {"doc_id": doc, "start": s, "end": s + len(quote), "quote": quote}


GOOD_QUESTIONS = [
    {"id": "g1", "question": "Gold window?", "evidence": [{"doc_id": "refunds",
                                                          "quote": "Gold tier: 14 days"}]},
    {"id": "g2", "question": "Silver fee?",
     "evidence": [{"quote": "Silver tier: 7 days, fee 5%."}]},
    {"id": "g3", "question": "Weekend?", "evidence": [{"quote": "Weekend support: none."}]},
]


def golden_variants() -> list[tuple[str, list, int, str]]:
    """(name, records, good questions expected, text of the expected problem).

    A record is a dict (written as JSON / a CSV row) or a str (written as is: a bad line)."""
    ok = GOOD_QUESTIONS
    q = lambda i, ev, **kw: {"id": i, "question": f"Question {i}?", "evidence": ev, **kw}  # noqa
    gold = [{"doc_id": "refunds", "quote": "Gold tier: 14 days"}]
    return [
        ("clean", ok, 3, ""),
        ("duplicate id", [*ok, q("g1", gold)], 3, "duplicate id 'g1'"),
        ("ids 1 and '1'", [q(1, gold), *ok, q("1", [{"quote": "Bronze tier: no refunds."}])], 4,
         "duplicate id '1'"),
        ("unknown doc_id (quote)", [*ok, q("x", [{"doc_id": "nope", "quote": "Gold"}])], 3,
         "unknown document 'nope'"),
        ("quote not found", [*ok, q("x", [{"quote": "Platinum tier"}])], 3, "not found"),
        ("quote twice", [*ok, q("x", [{"quote": "tier:"}])], 3, "times"),
        ("no evidence", [*ok, q("x", [])], 3, "no evidence"),
        ("refusal without evidence", [*ok, q("x", [], type="refusal")], 4, ""),
        ("refusal with evidence", [*ok, q("x", gold, type="refusal")], 3, "refusal"),
        ("no question text", [*ok, {"id": "x", "evidence": gold}], 3, "no question text"),
        ("unknown type", [*ok, q("x", gold, type="factoid")], 3, "type 'factoid'"),
        ("span ok", [*ok, q("x", [_span("refunds", "Bronze tier")])], 4, ""),
        ("span ok, no quote", [*ok, q("x", [{k: v for k, v in _span("refunds", "Bronze").items()
                                             if k != "quote"}])], 4, ""),
        ("span not its quote", [*ok, q("x", [{**_span("refunds", "Bronze"), "start": 3}])], 3,
         "not the quote"),
        ("span past the end", [*ok, q("x", [{"doc_id": "refunds", "start": 10, "end": 10_000}])],
         3, "not inside"),
        ("span end < start", [*ok, q("x", [{"doc_id": "refunds", "start": 20, "end": 5}])], 3,
         "not inside"),
        ("span string offsets", [*ok, q("x", [{"doc_id": "refunds", "start": "1", "end": "9"}])],
         3, "integer"),
        ("span float offsets", [*ok, q("x", [{"doc_id": "refunds", "start": 1.0, "end": 9.5}])],
         3, "integer"),
        ("span words as offsets", [*ok, q("x", [{"doc_id": "refunds", "start": "one",
                                                 "end": "9"}])], 3, "integer"),
        ("span negative offsets", [*ok, q("x", [{"doc_id": "refunds", "start": -4, "end": 9}])],
         3, "not inside"),
        ("span unknown doc", [*ok, q("x", [{"doc_id": "nope", "start": 1, "end": 5}])], 3,
         "unknown document"),
        ("span without doc_id", [*ok, q("x", [{"start": 1, "end": 5}])], 3, "needs its doc_id"),
        ("quote with U+2028", [*ok, q("x", [{"quote": "weekdays.\u2028Weekend"}])], 4, ""),
        ("quote with U+0085", [*ok, q("x", [{"quote": "Bronze tier: no refunds."}],
                                      answer="no\u0085refunds")], 4, ""),
        ("evidence a string", [*ok, q("x", "Gold tier")], 3, "evidence must be a list"),
        ("evidence items strings", [*ok, q("x", ["Gold tier"])], 3, "must be an object"),
        ("bad JSON line", [*ok, '{"id": "x", "question": '], 3, "not valid JSON"),
        ("a JSON array line", [*ok, "[1, 2]"], 3, "expected a JSON object"),
        ("context not an object", [*ok, q("x", gold, context="EU")], 3, "context"),
    ]


# variants a CSV file cannot express (a CSV offset "1" is the number 1)
JSONL_ONLY = {"evidence a string", "evidence items strings", "bad JSON line",
              "a JSON array line", "span without doc_id", "context not an object",
              "no question text", "span float offsets", "span string offsets",
              "span negative offsets"}
FORMATS = ("jsonl", "jsonl+bom", "jsonl+crlf", "csv", "csv+bom", "csv+crlf")


def write_questions(folder: Path, name: str, records: list, fmt: str) -> Path:
    """Write records as JSONL or CSV (id,question,quote,doc_id,start,end,type), with a BOM
    or CRLF line endings when `fmt` says so."""
    import csv
    import io
    import json as _json

    nl = "\r\n" if fmt.endswith("crlf") else "\n"
    if fmt.startswith("jsonl"):
        body = nl.join(r if isinstance(r, str) else _json.dumps(r, ensure_ascii=False)
                       for r in records) + nl
        path = folder / f"{name}.jsonl"
    else:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator=nl)
        w.writerow(["id", "question", "quote", "doc_id", "start", "end", "type", "answer"])
        for r in records:
            for ev in (r.get("evidence") or [{}]):
                w.writerow([r.get("id", ""), r.get("question", ""), ev.get("quote", ""),
                            ev.get("doc_id", ""), ev.get("start", ""), ev.get("end", ""),
                            r.get("type", ""), r.get("answer", "")])
        body = buf.getvalue()
        path = folder / f"{name}.csv"
    data = body.encode("utf-8")
    path.write_bytes((b"\xef\xbb\xbf" if fmt.endswith("bom") else b"") + data)
    return path


def whole_file_variants() -> list[tuple[str, str, bytes, str]]:
    """(name, suffix, bytes, text of the expected GoldenError) for files unusable as a whole."""
    return [
        ("json array", ".jsonl", b'[{"id": "a", "question": "q"}]\n', "JSON array"),
        ("pretty json array", ".jsonl", b'[\n  {"id": "a"}\n]\n', "JSON array"),
        ("latin-1 csv", ".csv", "id,question,quote\na,caf\xe9?,Gold\n".encode("latin-1"),
         "not valid UTF-8"),
        ("latin-1 jsonl", ".jsonl", '{"id": "caf\xe9"}\n'.encode("latin-1"), "not valid UTF-8"),
        ("utf-16 no bom", ".jsonl", '{"id": "a"}\n'.encode("utf-16-le"), "UTF-16"),
        ("csv without question column", ".csv", b"id,quote\na,Gold\n", "no 'question' column"),
        ("binary", ".csv", b"\x00\x01\x02" * 50, "binary"),
    ]


def golden_area(folder: Path) -> Area:
    from ..golden import GoldenError, build_golden, check_questions, read_golden

    area = Area("golden files")
    docs = _golden_docs()
    for name, records, want, problem in golden_variants():
        for fmt in FORMATS:
            if fmt.startswith("csv") and (name in JSONL_ONLY
                                          or any(len(r.get("evidence") or []) > 1
                                                 for r in records if isinstance(r, dict))):
                continue

            def check(name=name, records=records, want=want, problem=problem, fmt=fmt):
                path = write_questions(folder, f"{name.replace(' ', '_')}-{fmt}".replace(
                    "'", ""), records, fmt)
                got, probs = check_questions(path, docs)
                _expect(len(got) == want, f"{len(got)} questions kept, expected {want}; "
                        f"problems: {[str(p) for p in probs]}")
                if problem:
                    _expect(len(probs) == 1 and problem in probs[0].message,
                            f"expected one problem with {problem!r}, got "
                            f"{[str(p) for p in probs]}")
                    _expect(probs[0].line > 1, f"problem has no line: {probs[0]}")
                else:
                    _expect(not probs, f"unexpected problems {[str(p) for p in probs]}")
                ids = [r["id"] for r in got]
                _expect(len(set(ids)) == len(ids), f"duplicate ids kept: {ids}")
                for r in got:
                    for e in r["evidence"]:
                        _expect(docs[e["doc_id"]].text[e["start"]:e["end"]] == e["quote"],
                                "a kept span is not its quote")
                # what ragkit writes, it reads back (U+2028 and friends included)
                out = path.with_suffix(".golden.jsonl")
                build_golden(path, docs, out)
                back = read_golden(out, docs)
                _expect([q.id for q in back] == ids, "written golden file does not read back")
            area.case(f"{name} [{fmt}]", check)
    for name, suffix, data, want in whole_file_variants():
        def check(name=name, suffix=suffix, data=data, want=want):
            path = folder / f"whole-{name.replace(' ', '_')}{suffix}"
            path.write_bytes(data)
            try:
                check_questions(path, docs)
            except GoldenError as e:
                _expect(want in str(e) and str(e).startswith(f"{path}:"),
                        f"unclear error: {e}")
                return
            raise AssertionError("no error for an unusable file")
        area.case(f"whole file: {name}", check)
    return area


# ---- caches ----------------------------------------------------------------------------

def caches_area(folder: Path) -> Area:
    import warnings

    import numpy as np

    from ..cache import CacheWarning, JsonlCache, VectorCache

    area = Area("caches")
    specials = ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\r"]
    for i, ch in enumerate(specials):
        def check(ch=ch, i=i):
            c = JsonlCache(folder / f"sep{i}.jsonl")
            c.put({"key": "a", "preamble": f"one{ch}two"})
            c.put({"key": "b", "preamble": "plain"})
            with warnings.catch_warnings():
                warnings.simplefilter("error", CacheWarning)
                again = JsonlCache(c.path)
                _expect(again.get("a")["preamble"] == f"one{ch}two" and again.corrupt == 0,
                        f"{ch!r} in a cached value reads back as corrupt")
        area.case(f"jsonl cache keeps {ch!r}", check)
    for i, bad in enumerate([b"\xff\xfe", b"\xe9", b"{not json", b"[1, 2]", b'"string"',
                             b'{"key": "z", "sha256": "0"}']):
        def check(bad=bad, i=i):
            c = JsonlCache(folder / f"bad{i}.jsonl")
            c.put({"key": "a", "preamble": "x"})
            with c.path.open("ab") as f:
                f.write(bad + b"\n")
            c2 = JsonlCache(c.path)
            c2.put({"key": "b", "preamble": "y"})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CacheWarning)
                c3 = JsonlCache(c.path)
                _expect(c3.get("a") is not None and c3.get("b") is not None
                        and c3.corrupt == 1, f"corrupt={c3.corrupt}")
        area.case(f"jsonl cache survives a bad line {bad[:12]!r}", check)
    blocked = folder / "a-file"
    blocked.write_text("not a folder")
    for kind in ("vectors", "jsonl"):
        def check(kind=kind):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                if kind == "vectors":
                    v = VectorCache(blocked / "embeddings")
                    v.put(["a"], np.ones((1, 3), dtype=np.float32))
                    v.put(["b"], np.ones((1, 3), dtype=np.float32))
                    _expect(len(v.get(["a", "b"])[0]) == 2, "vectors lost in memory")
                    _expect(v.unwritable is not None, "not reported")
                else:
                    c = JsonlCache(blocked / "pre.jsonl")
                    c.put({"key": "a"})
                    c.put({"key": "b"})
                    _expect(c.get("b") is not None and c.unwritable is not None, "lost")
                _expect(sum(issubclass(x.category, CacheWarning) for x in w) == 1,
                        "expected one warning")
        area.case(f"unwritable {kind} cache", check)
    for i, data in enumerate([b"", b"PK\x03\x04garbage", b"\x00" * 100]):
        def check(data=data, i=i):
            d = folder / f"shards{i}"
            v = VectorCache(d)
            v.put(["a"], np.ones((1, 2), dtype=np.float32))
            shard = next(d.glob("*.npz"))
            shard.write_bytes(data)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", CacheWarning)
                v2 = VectorCache(d)
                found, missing = v2.get(["a"])
                _expect(missing == ["a"] and v2.corrupt, "corrupt shard not detected")
        area.case(f"corrupt vector shard {i}", check)
    return area


# ---- concurrency: runs appending to one results file ------------------------------------

_APPENDER = """
import sys, time
from ragkit.results import append_rows
path, who, n, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
while time.time() < start:
    time.sleep(0.001)
for i in range(n):
    append_rows(path, [{"who": who, "i": i, "j": j} for j in range(2)])
"""


def concurrency_area(folder: Path, trials: int = 3, appends: int = 20) -> Area:
    import subprocess

    from ..results import read_rows

    area = Area("concurrency")
    for t in range(trials):
        for procs in (2, 3):
            def check(t=t, procs=procs):
                path = folder / f"rows-{t}-{procs}.jsonl"
                start = time.time() + 1.5
                runs = [subprocess.Popen([sys.executable, "-c", _APPENDER, str(path), f"p{k}",
                                          str(appends), str(start)]) for k in range(procs)]
                codes = [r.wait(timeout=120) for r in runs]
                _expect(codes == [0] * procs, f"exit codes {codes}")
                rows = read_rows(path)
                _expect(len(rows) == procs * appends * 2,
                        f"{len(rows)} rows kept of {procs * appends * 2}")
            area.case(f"{procs} processes x {appends} appends, trial {t + 1}", check)
    return area


# ---- the command line, through real subprocesses ----------------------------------------

def _cli(args: list[str], env: dict | None = None, timeout: int = 600):
    import os
    import subprocess

    return subprocess.run([sys.executable, "-m", "ragkit", *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


def _cli_corpus(folder: Path) -> tuple[Path, Path]:
    docs = folder / "cli-docs"
    docs.mkdir(exist_ok=True)
    (docs / "refunds.md").write_text(GOLDEN_TEXT, encoding="utf-8")
    (docs / "broken.md").write_bytes(b"---\neffective_date: 2024-02-30\n---\nx\n")
    q = write_questions(folder, "cli-questions", GOOD_QUESTIONS[:2], "jsonl")
    return docs, q


def cli_area(folder: Path, quick: bool = False) -> Area:
    import json as _json

    area = Area("CLI")
    docs, q = _cli_corpus(folder)
    results = folder / "cli-rows.jsonl"

    def run(label, args, code, needle="", env=None, stream="stderr"):
        def check():
            out = _cli(args, env)
            text = out.stderr if stream == "stderr" else out.stdout
            _expect("Traceback" not in out.stderr, f"a traceback: {out.stderr[-400:]}")
            _expect(out.returncode == code, f"exit {out.returncode}, expected {code}: "
                    f"{out.stderr[-300:]}")
            _expect(needle in text, f"{needle!r} not in {stream}: {text[-300:]}")
        area.case(label, check)

    base = ["eval", "--corpus", str(docs), "--golden", str(q), "--results", str(results)]
    usage = [
        ("--k 0", ["--k", "0"], "--k"), ("--k -3", ["--k", "-3"], "--k"),
        ("--k abc", ["--k", "abc"], "--k"),
        ("--strategies ,", ["--strategies", ","], "names no strategy"),
        ("--strategies nope", ["--strategies", "nope"], "unknown chunker"),
        ("--strategies recursive:abc", ["--strategies", "recursive:abc"], "SIZE"),
        ("--strategies recursive:10/20", ["--strategies", "recursive:10/20"], "OVERLAP < SIZE"),
        ("--strategies structure:100", ["--strategies", "structure:100"], "takes no SIZE"),
        ("--embedder /nonexistent", ["--embedder", "/nonexistent/model"], "no such folder"),
    ]
    for label, extra, needle in (usage[:3] + usage[-1:] if quick else usage):
        run(f"eval {label}", base + extra, 2, needle)
    run("chunk a bad file", ["chunk", str(docs / "broken.md")], 3, "not a valid date")
    run("eval with a missing golden file", ["eval", "--corpus", str(docs), "--golden",
                                            str(folder / "none.jsonl")], 3, "no such file")
    arr = folder / "array.jsonl"
    arr.write_text('[{"id": "a"}]\n')
    run("eval with a JSON array golden file", ["eval", "--corpus", str(docs), "--golden",
                                               str(arr)], 3, "JSON array")
    corrupt = folder / "corrupt-rows.jsonl"
    corrupt.write_text('{"ok": 1}\n{broken\n')
    run("eval with a corrupt results file", ["eval", "--corpus", str(docs), "--golden", str(q),
                                             "--results", str(corrupt)], 3, ":2:")
    empty = folder / "empty.jsonl"
    empty.write_text("\n\n")
    all_bad = write_questions(folder, "cli-all-bad", [
        {"id": "a", "question": "?", "evidence": [{"quote": "Platinum"}]},
        {"id": "a", "question": "?", "evidence": "Gold"}], "jsonl")
    nodocs = folder / "cli-nodocs"
    nodocs.mkdir(exist_ok=True)
    (nodocs / "x.md").write_bytes(b"\x00" * 10)
    fast = [
        ("chunk --limit -1", ["chunk", str(docs / "refunds.md"), "--limit", "-1"], 2, "--limit"),
        ("chunk --strategy nope", ["chunk", str(docs), "--strategy", "nope"], 2,
         "unknown chunker"),
        ("chunk --strategy two", ["chunk", str(docs), "--strategy", "recursive,structure"], 2,
         "give one strategy"),
        ("chunk a missing path", ["chunk", str(folder / "missing.md")], 3, "no such file"),
        ("show --k 0", ["show", "--corpus", str(docs), "--golden", str(q), "--question", "g1",
                        "--k", "0"], 2, "--k"),
        ("show an unknown question", ["show", "--corpus", str(docs), "--golden", str(q),
                                      "--question", "zz"], 3, "not found"),
        ("show a skipped question", ["show", "--corpus", str(docs), "--golden", str(all_bad),
                                     "--question", "a"], 3, "was skipped"),
        ("eval with an empty golden file", ["eval", "--corpus", str(docs), "--golden",
                                            str(empty)], 3, "no question"),
        ("eval where every question is bad", ["eval", "--corpus", str(docs), "--golden",
                                              str(all_bad)], 3, "duplicate id"),
        ("eval on a folder of unreadable files", ["eval", "--corpus", str(nodocs), "--golden",
                                                  str(q)], 3, "no readable documents"),
        ("eval --corpus a file", ["eval", "--corpus", str(docs / "refunds.md"), "--golden",
                                  str(q)], 3, "no such folder"),
        ("unknown command", ["frobnicate"], 2, "invalid choice"),
        ("no command", [], 2, "required"),
    ]
    for label, args, code, needle in (fast[:4] if quick else fast):
        run(label, args, code, needle)
    if quick:
        return area
    dup = write_questions(folder, "cli-dup", [*GOOD_QUESTIONS[:2], {
        "id": "g1", "question": "Again?", "evidence": [{"quote": "Bronze tier: no refunds."}]}],
        "jsonl")
    blocked = folder / "cache-is-a-file"
    blocked.write_text("x")

    def dup_and_readonly():
        out = _cli(["eval", "--corpus", str(docs), "--golden", str(dup), "--strategies",
                    "recursive:40/0", "--k", "2", "--results", str(results)],
                   {"RAGKIT_CACHE_DIR": str(blocked / "cache")})
        _expect("Traceback" not in out.stderr, f"a traceback: {out.stderr[-400:]}")
        _expect(out.returncode == 1, f"exit {out.returncode}: {out.stderr[-300:]}")
        _expect("duplicate id 'g1'" in out.stderr and "line 1" in out.stderr,
                f"duplicate not reported: {out.stderr[-300:]}")
        _expect("cannot be written" in out.stderr, "read-only cache not reported")
        _expect("not a valid date" in out.stderr, "bad file not reported")
        rows = [_json.loads(x) for x in results.read_text().split("\n") if x.strip()]
        _expect(rows and {r["n_queries"] for r in rows} == {2}, "rows not written")
    area.case("eval: duplicate id, read-only cache, a bad file -> exit 1", dup_and_readonly)
    return area


def run_areas(folder: Path, chunkers: dict | None = None, big_line_mb: float = 2,
              quick: bool = False, only: tuple[str, ...] = AREAS) -> list[Area]:
    """Every area of the suite (or `only` some); `quick` is the subset the tests run."""
    chunkers = chunkers or default_chunkers()
    out = []
    if "documents" in only:
        out.append(documents_area(chunkers, big_line_mb, folder))
    if "folders" in only:
        out.append(folders_area(folder / "folders"))
    if "golden files" in only:
        (folder / "golden").mkdir()
        out.append(golden_area(folder / "golden"))
    if "CLI" in only:
        (folder / "cli").mkdir()
        out.append(cli_area(folder / "cli", quick=quick))
    if "caches" in only:
        (folder / "caches").mkdir()
        out.append(caches_area(folder / "caches"))
    if "caps" in only:
        out.append(caps_area(chunkers, 0.3 if quick else 1.0))
    if "concurrency" in only:
        (folder / "concurrency").mkdir()
        out.append(concurrency_area(folder / "concurrency", trials=1 if quick else 3,
                                    appends=10 if quick else 20))
    return out


def main(argv: list[str] | None = None, prog: str = "ragkit robustness") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fuzz-seconds", type=float, default=0,
                   help="fuzzing time, shared by the chunkers (default 0; make fuzz: 600)")
    p.add_argument("--big-line-mb", type=float, default=2,
                   help="size of the one-line input in MB (default 2; make fuzz: 10)")
    p.add_argument("--late-tokens", type=int, default=0,
                   help="size of the late-chunking input in MiniLM tokens (default 0 = off; "
                        "make fuzz: 1,000,000)")
    p.add_argument("--late-forward", action="store_true",
                   help="also embed the late-chunking input with one chunker and report memory")
    p.add_argument("--quick", action="store_true", help="the subset the tests run")
    p.add_argument("--areas", default=",".join(AREAS),
                   help=f"comma-separated areas (default all: {', '.join(AREAS)})")
    args = p.parse_args(argv)
    only = tuple(x.strip() for x in args.areas.split(",") if x.strip())
    unknown = [x for x in only if x not in AREAS]
    if unknown:
        p.error(f"unknown area(s) {unknown}; choose from {', '.join(AREAS)}")
    chunkers = default_chunkers()
    t0 = time.perf_counter()
    import warnings

    from ..cache import CacheWarning

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore", CacheWarning)  # the cases check them themselves
        areas = run_areas(Path(tmp), chunkers, args.big_line_mb, args.quick, only)
    failed = sum(len(a.failures) for a in areas)
    for a in areas:
        for line in a.failures[:20]:
            print(f"  FAILED {a.name}: {line}")
        if len(a.failures) > 20:
            print(f"  ... {len(a.failures) - 20} more failures in {a.name}")
    extra = []
    if args.fuzz_seconds > 0:
        per = args.fuzz_seconds / max(1, len(chunkers))
        tried_all, fails_all = 0, 0
        for name, chunker in chunkers.items():
            tried, fails = fuzz(chunker, seconds=per)
            tried_all += tried
            fails_all += len(fails)
            for line in fails[:3]:
                print(f"  FAILED fuzz {name}: {line}")
        extra.append(("fuzz examples", tried_all, fails_all))
        failed += fails_all
    if args.late_tokens > 0:
        late_rows, late_failed = late_suite(chunkers, args.late_tokens, args.late_forward)
        print(f"\nlate chunking, {args.late_tokens:,}-token document:")
        for line in late_rows:
            print("  " + line)
        runs = sum(": ok" in line or "FAILED" in line for line in late_rows)
        extra.append(("late chunking", runs, late_failed))
        failed += late_failed
    print(f"\n{'area':<16} {'tried':>7} {'failed':>7}")
    for a in areas:
        print(f"{a.name:<16} {a.tried:>7} {len(a.failures):>7}")
    for name, tried, fails in extra:
        print(f"{name:<16} {tried:>7} {fails:>7}")
    tried = sum(a.tried for a in areas)
    print(f"total: {tried} cases tried ({len(chunkers)} chunkers), {failed} failed, "
          f"{time.perf_counter() - t0:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
