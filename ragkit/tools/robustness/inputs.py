"""Documents: every hostile input through every chunker gives correct chunks or a clear error
naming file and line.

The inputs of the ``documents`` area, and random ones for fuzzing. Every chunker must chunk
each input correctly (every chunk's text is its span, every
non-whitespace character is covered, chunks are sorted) or raise a `DocumentError` whose message
starts with ``path:line:``. The inputs are generated, not stored.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...text.documents import DocumentError, load_document
from ...types import Document, check_chunks
from .base import Area, Context, expect


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
    from ...chunkers import REGISTRY

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


def run(ctx: Context) -> Area:
    return documents_area(ctx.chunkers, ctx.big_line_mb, ctx.folder)


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
                expect(got == want, f"expected {want}, got {got}")
            area.case(f"{name} x {bad.name}", check)
    return area
