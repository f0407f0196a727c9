# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 10 · PDFs: filings with tables and pages, at an equal budget
#
# Terms: every metric, word and seed essay, defined once: [glossary](../docs/glossary.md).
#
# Most documents that teams put behind a retriever are PDFs, and a PDF holds no paragraphs,
# headings or tables: only characters placed on pages. Seed 002 names the failure ("PDFs whose
# tables were extracted poorly by the ingestion pipeline are noise") and its table of fixes
# asks for tables in PDFs to be chunked "Per-row, with column headers re-attached".
# **The question here: on filings, which chunking hands the model the evidence at an equal
# context budget, and does keeping a table's header with its rows matter?**
#
# First the mechanism, on a four-page filing written for this course (Northwind Cloud's
# annual report, figures invented; it runs anywhere, CI included). Then FinanceBench's
# questions over public 10-K and 10-Q filings, measured by `ragkit bench design`: every simple
# baseline, one chunk per page, ragkit's router, under dense search and ragkit's stack.

# %%
import time

import pandas as pd
from IPython.display import Markdown, display

from ragkit.config import PROJECT_ROOT, get_settings, seed_everything
from ragkit.report import Recorder, quiet_cells

quiet_cells()  # each cell's warnings as one line per kind
seed_everything()
settings = get_settings()
BUDGET = 1024  # cl100k tokens that reach the model: the course's headline budget
SAMPLE = PROJECT_ROOT / "data" / "pdfs" / "northwind-annual-report-2023.pdf"
rec = Recorder("10_pdfs")

# %% [markdown]
# ## One filing, read two ways
#
# An ingestion pipeline that "extracts the text" hands on each page's lines and nothing else:
# a table becomes lines of words and figures, its columns separated by spaces. ragkit reads
# each character's box, size and weight (`ragkit.text.pdf`, with PDFium) and rebuilds what the
# layout shows: a wide gap between two characters separates two cells, a run of lines whose
# later cells hold figures is a table (the line of column names just above it is its header),
# a short line set larger or bold is a heading. The result is Markdown, with each page's
# character span kept, so every chunk knows its pages.

# %%
from ragkit.text import load_document, plain_pages
from ragkit.text.pdf import pdf_to_markdown

plain = plain_pages(SAMPLE)
t0 = time.perf_counter()
repeats = 20
for _ in range(repeats):
    pdf_to_markdown(SAMPLE)
per_page = (time.perf_counter() - t0) / (repeats * len(plain))
doc = load_document(SAMPLE)
pages = doc.metadata["pages"]
print(f"{len(pages)} pages, {doc.metadata['tables']} Markdown tables, "
      f"{doc.metadata['continued_tables']} of them going on across a page break; "
      f"{1000 * per_page:.1f} ms a page ({1 / per_page:,.0f} pages a second, this machine)")
rec.add(experiment="pdf_sample", benchmark="course", strategy="pdf_to_markdown",
        metric="pages_per_s", value=1 / per_page, n_queries=0)
first, second = pages[0], pages[1]
print("\n── page 1 as plain text (its last 12 lines)")
print("\n".join(plain[0].splitlines()[-12:]))
print("\n── page 1 as ragkit reads it (its last 12 lines)")
print("\n".join(doc.text[first[0]:first[1]].splitlines()[-12:]))
print("\n── page 2 as ragkit reads it (its first 6 lines)")
print("\n".join(doc.text[second[0]:second[1]].splitlines()[:6]))

# %% [markdown]
# The statement of operations runs from the first page onto the second, below a running
# header. On the second page the plain text starts with figures whose columns nothing names; ragkit's reading
# repeats the table's header row there, since the table goes on, so each page's part reads as
# the table it is.
#
# ## What each chunker hands the model for a table question
#
# The question: *What was Northwind Cloud's non-current deferred revenue at the end of 2022?*
# The answer is one cell of a row far down the balance sheet on the third page; the dates that say
# which cell is 2022 are in the table's header row, many rows above. A chunk that holds the row
# without that header hands the model two figures and no dates. Below, every simple baseline
# the course measures, one chunk per page, and ragkit's router, each cutting the same Markdown.

# %%
from ragkit.chunkers import Router
from ragkit.experiments.design import simple_baselines
from ragkit.report import chunk_view, table_cuts
from ragkit.text.locate import locate
from ragkit.types import Span

QUOTE = "| Deferred revenue, non-current | 21.7 | 18.2 |"
(start, end), = locate(doc.text, QUOTE)
gold = Span(doc.id, start, end)
chunkers = [*simple_baselines(paged=True), Router()]
cuts = table_cuts(doc, gold, chunkers)
table = pd.DataFrame([{k: v for k, v in c.items() if not k.startswith("_")} for c in cuts])
kept = table[table["header with it"]]
display(table)
print(f"{len(kept)} of {len(table)} chunkers hand the model the row with its header row")

# %% [markdown]
# One chunk per page keeps the header because the page holds the whole table, at a price: a
# page is longer than the MiniLM window of `256` tokens, so dense search reads only its start
# (the results rows flag it as truncated), while the stack reads it in windows. The router's
# chunk is the row alone, with the header row in its prefix: seed 002's "Per-row, with column
# headers re-attached".
#
# Two of those chunks in full, the gold row between ⟦ and ⟧: the smallest fixed-size window
# and the router's chunk. A prefix is text embedded and shown with the chunk but kept apart
# from its body (here the table's header row, which the structure chunker repeats on every
# piece of a table it must split).

# %%
for c in cuts:
    if c["chunker"] in ("fixed_chars(250/0)", "router"):
        chunk = c["_chunk"]
        print(f"══ {c['chunker']}: header with it: {c['header with it']}")
        if chunk.prefix:
            print(f"[prefix] {chunk.prefix}")
        print(chunk_view(doc, [chunk], gold, fmt="text"), end="\n\n")

# %% [markdown]
# ## FinanceBench at an equal budget
#
# FinanceBench (Patronus AI) asks questions over public filings, each with its evidence text
# and page. ragkit reads each filing's PDF as above and anchors the evidence to the extracted
# text by its letters and digits (spaces, pipes and line breaks aside), falling back to the
# whole evidence page where the extraction differs; the questions say which. The split puts
# every filing of a company on one side. The next cell reads the filings when this machine has
# them (`RAGKIT_BENCHMARKS_DIR`, or ragkit's download cache; not in CI).

# %%
from ragkit.evaluate import load
from ragkit.evaluate.sources import BenchmarkUnavailable

try:
    fb = None if settings.smoke else load("financebench", allow_download=False)
except BenchmarkUnavailable as e:
    fb = None
    print(f"FinanceBench's files are not on this machine: {e}")
if fb is not None:
    info = fb.info
    speed = info["pages"] / info["extract_seconds"] if info["extract_seconds"] else float("nan")
    print(f"{len(fb.documents)} filings ({info['pages']:,} pages) and {len(fb.queries)} of "
          f"{info['questions_in_set']} questions; {len(info['filings_missing'])} filings "
          f"missing from the copy here, which drops {info['questions_dropped']['filing missing']}"
          f" questions")
    print(f"gold anchored to the text: {info['anchored_text']} evidence items; to a whole page:"
          f" {info['anchored_page']}")
    print(f"extraction: {speed:,.0f} pages a second ({info['extract_seconds']:,.0f} s for "
          f"{info['pages']:,} pages, when the cache was filled)")
    for metric, value in (("filings", len(fb.documents)), ("questions", len(fb.queries)),
                          ("anchored_text", info["anchored_text"]),
                          ("anchored_page", info["anchored_page"]),
                          ("pages_per_s", speed)):
        rec.add(experiment="financebench_ingest", benchmark="financebench",
                strategy="pdf_to_markdown", metric=metric, value=float(value),
                n_queries=len(fb.queries))
elif settings.smoke:
    print("smoke profile: FinanceBench is not read here")

# %% [markdown]
# Encoding all the filings takes hours on two CPUs, so `ragkit bench design` can run on a
# sample of whole companies (`--financebench-chars`, companies taken in the order of a hash of
# their name, blind to any result); every row says which sample it measured. The board: each
# configuration's span recall, pass and page hit at the headline budget on the held-out half,
# each with its 95 % interval. Page hit asks only whether text from an evidence page reached
# the model.

# %%
from ragkit.experiments.design import effects, saved_runs
from ragkit.report import (board, chunk_sizes, guide, load_results, percent_table,
                           ranked_intervals, show_figure)

runs = [r for r in saved_runs() if r.benchmark == "financebench"]
if runs:
    samples = sorted({f for r in runs for f in r.flags if f.startswith("sample:")})
    print("\n".join(samples) or "all filings")
    fb_board = pd.DataFrame(board(runs, "financebench", BUDGET))
    sizes = chunk_sizes(load_results(), "financebench")  # what each chunker gives to embed
    fb_board["chunks"] = fb_board.configuration.map(lambda c: sizes.get(c, {}).get("n_chunks"))
    shown = ["configuration", "n", "recall", "recall_low", "recall_high", "pass", "page_hit",
             "chunks"]
    display(percent_table(fb_board[shown], counts=["n", "chunks"]))
    fig = ranked_intervals(fb_board.rename(columns={"configuration": "strategy"}),
                           highlight=lambda s: s.split("+")[0] in {
                               c.label for c in simple_baselines(paged=True)},
                           title=f"FinanceBench, held-out half: span recall@B{BUDGET}")
    show_figure(fig, "10_financebench_board")
else:
    print("no FinanceBench rows in these results (ragkit bench design --benchmarks "
          "financebench writes them; the smoke profile has none)")

# %% [markdown]
# One factor at a time: ragkit's router against the best of every simple baseline measured
# under the same retrieval (chosen on the tune half, read on the held-out half), at each
# budget, and the stack against dense search on the same chunks.

# %%
found = effects(runs)
if found:
    display(Markdown(guide.sections(found, level=3)))

# %% [markdown]
# ## Exercises
# Each runs as written; change the value and run it again.
#
# 1. **A row near its header.** Ask about gross profit instead, a row a few lines below the
#    header of the statement of operations on the first page. Which chunkers hand the model the header
#    with this row, and why more of them than for deferred revenue?

# %%
QUOTE_2 = "| Gross profit | 328.3 | 271.5 | 220.7 |"
(s2, e2), = locate(doc.text, QUOTE_2)
cuts_2 = pd.DataFrame([{k: v for k, v in c.items() if not k.startswith("_")}
                       for c in table_cuts(doc, Span(doc.id, s2, e2), chunkers)])
cuts_2[["chunker", "row whole", "header with it", "pages"]]

# %% tags=["answers"] jupyter={"source_hidden": true, "outputs_hidden": true}
# Answer to exercise 1 (expand to read): the chunkers that keep the header for gross profit
# but not for deferred revenue. A window reaches the header only when the row sits within a
# window's length of it; the structure-aware chunkers repeat it wherever the row sits.
both = table[["chunker", "header with it"]].merge(
    cuts_2[["chunker", "header with it"]], on="chunker", suffixes=(" deferred revenue",
                                                                  " gross profit"))
print(both.to_string(index=False))
print("header kept for gross profit only:",
      ", ".join(both.chunker[both["header with it gross profit"]
                             & ~both["header with it deferred revenue"]]) or "none")

# %% [markdown]
# 2. **Another budget.** Read the board at `512` and at `2,048` tokens. Does the leading
#    configuration change?

# %%
leaders = {b: board(runs, "financebench", b)[0]["configuration"] for b in (512, 1024, 2048)} \
    if runs else {}
leaders

# %%
print(rec.save())

# %% [markdown]
# ## What we measured

# %%
from ragkit.report import effect_decisions, guide_findings, ranked_closing

findings = [f"On the course's sample filing, {len(kept)} of {len(table)} chunkers hand the "
            f"model the deferred-revenue row with its table's header row: "
            f"{', '.join(kept['chunker'])}."]
if runs:
    chunks = {c: v["n_chunks"] for c, v in sizes.items() if c.endswith("+dense")}
    findings.append("Chunks to embed and index on the FinanceBench sample (the cost that grows "
                    "with the corpus): " + ", ".join(
                        f"{c.removesuffix('+dense')} {n:,.0f}"
                        for c, n in sorted(chunks.items(), key=lambda x: x[1])) + ".")
display(Markdown(ranked_closing(
    effect_decisions([e for e in found if e.benchmark == "financebench"], BUDGET),
    none="no complete FinanceBench effect in these results (`ragkit bench design "
    "--benchmarks financebench` writes them; the smoke profile has none)",
    findings=findings + guide_findings(found, BUDGET))))
