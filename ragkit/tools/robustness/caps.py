"""Size caps: documents made to crowd a cap, through every chunker that promises one."""

from __future__ import annotations

from ...types import Document, check_chunks
from .base import Area, Context, expect
from .inputs import uses_model


def run(ctx: Context) -> Area:
    return caps_area(ctx.chunkers, 0.3 if ctx.quick else 1.0)


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
    from ...chunkers.lint import atomic_unit, cap_findings

    check_chunks(doc, chunks, complete=True)
    over = [f for f in cap_findings(doc, chunks, chunker)
            if atomic_unit(doc, next(c for c in chunks if c.id == f.chunk_id)) is None]
    expect(not over, f"{len(over)} chunk(s) over the cap, first: {over[0].message}"
            if over else "")
    tiny = sum(len(c.text.strip()) <= 2 for c in chunks)
    expect(tiny <= max(2, len(chunks) // 20), f"{tiny} of {len(chunks)} chunks have bodies "
            "of at most two characters")


def caps_area(chunkers: dict, scale: float = 1.0) -> Area:
    from ...chunkers.lint import chunk_cap

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
