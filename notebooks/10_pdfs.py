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
# questions over public 10-K and 10-Q filings, measured by `ragkit bench design`.
#
# Words used here, each defined once in the glossary:
# - **budget**: the cl100k tokens of retrieved text that reach the model; every strategy fills
#   the same budget, so larger chunks cannot score more by being larger;
# - **span recall** (recall@B): the share of the gold evidence's characters inside that
#   context; **pass** (pass@B): the share of gold passages wholly inside it; **page hit**
#   (page_hit@B): whether any text from an evidence page got in;
# - **dense**: search by the encoder's vectors (all-MiniLM-L6-v2, which reads `256` tokens of
#   a chunk); **the stack**: ragkit's retrieval, dense search over windows of each chunk (so a
#   long chunk is read whole) fused with BM25 keyword search;
# - **simple baselines**: fixed-size windows of characters or tokens, recursive splitters
#   (ragkit's, langchain's and chonkie's), and here one chunk per page;
# - **the router**: ragkit's default chunker, which picks a chunker per kind of document; a
#   PDF with tables goes to the structure chunker (a table whole, or split between rows with
#   its header row repeated), and a document made mostly of tables to one row per chunk;
# - **prefix**: text embedded and shown with a chunk but kept apart from its body (here a
#   table's header row, or the headings above the chunk);
# - **tune and held-out halves**: the questions are split in two; a choice (the best
#   baseline) is made on the tune half and read on the held-out half.

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
print("\n── page 1 as plain text (its last 7 lines)")
print("\n".join(plain[0].splitlines()[-7:]))
print("\n── page 1 as ragkit reads it (its last 7 lines, blank lines aside)")
print("\n".join([x for x in doc.text[first[0]:first[1]].splitlines() if x.strip()][-7:]))
print("\n── page 2 as plain text (its first 4 lines)")
print("\n".join(plain[1].splitlines()[:4]))
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
# (the FinanceBench rows below count these truncated chunks); the stack reads it in windows,
# and whether that changes what a page retrieves is measured below. The router's
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
# Does the header in the prefix change where the row ranks? The same question, searched by
# dense search (MiniLM) over the filing's chunks: the router's, the router's with every prefix
# removed, and the window baseline with the most recall@B1024 on FinanceBench's tune half
# under dense search (a fixed or recursive window, chosen blind to this filing). The top three
# of the router and of that window, gold between ⟦ and ⟧, then the gold row's rank in all three.

# %%
from dataclasses import replace

from ragkit.embed import Embedder
from ragkit.experiments.design import saved_runs
from ragkit.report import hits_text
from ragkit.report import holding_rank, prefix_reading
from ragkit.report.pdf_lesson import window_pick
from ragkit.retrieve.retrievers import DenseRetriever
from ragkit.types import Query

ask = Query("sample-1", "What was Northwind Cloud's non-current deferred revenue at the end of "
            "2022?", gold=(gold,))
window = window_pick(saved_runs(), "financebench", BUDGET)
if window is None:  # no saved FinanceBench runs (the smoke profile): say which window stands in
    window = "recursive(1000/200,chars)"
    print(f"No saved FinanceBench runs to pick the window baseline from: {window} stands in.")
by_chunker = {c.label: c.chunk(doc) for c in chunkers}
ranked = {}
for name, pieces in (("router", by_chunker["router"]),
                     ("router, prefix removed", [replace(c, prefix="") for c in by_chunker["router"]]),
                     (window, by_chunker[window])):
    ranked[name] = DenseRetriever(pieces, Embedder()).search([ask.text], len(pieces))[0]
for name in ("router", window):
    print(f"══ {name}")
    print(hits_text(ask, ranked[name], k=3, lines=3))
win_rank = holding_rank(ranked[window], gold)
display(Markdown(
    prefix_reading(ranked["router"], ranked["router, prefix removed"], gold)
    + f" The window baseline's chunk that holds the row ranks "
    + (f"{win_rank} of {len(ranked[window])}" if win_rank else "nowhere (no window holds it)")
    + ": its chunks are longer and fewer, so a rank there is not a rank among the router's "
    "pieces. Which of them hands the model the row within a budget is what the benchmark "
    "below measures, in tokens."))

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
# Encoding every filing is more than a two-CPU machine does in a session, so `ragkit bench
# design` can run on a sample of whole companies (`--financebench-chars`, companies taken in
# the order of a hash of their name, blind to any result); every row says which sample it
# measured. The board: each configuration's span recall at the headline budget on the
# held-out half with its 95 % interval, pass and page hit beside it, and the chunks it
# embedded. Its first line says, from its own intervals, what so few held-out questions can
# and cannot tell.

# %%
from ragkit.experiments import flag_count
from ragkit.experiments.design import effects, saved_runs
from ragkit.report import (board, chunk_sizes, guide, load_results, percent_table,
                           ranked_intervals, show_figure)
from ragkit.report.pdf_lesson import small_n_note

runs = [r for r in saved_runs() if r.benchmark == "financebench"]
if runs:
    samples = sorted({f.split(":", 1)[1] for r in runs for f in r.flags
                      if f.startswith("sample:")})
    fb_board = pd.DataFrame(board(runs, "financebench", BUDGET))
    sizes = chunk_sizes(load_results(), "financebench")  # what each chunker gives to embed
    cut = max((flag_count(r.flags) for r in runs if r.config.chunker == "pages"), default=0)
    n_pages = sizes.get("pages+dense", {}).get("n_chunks", 0)
    found = effects(runs)  # the paired comparisons, read below the board
    display(Markdown(f"**{small_n_note(board(runs, 'financebench', BUDGET), found, BUDGET)}**"))
    display(Markdown(
        f"Measured: {'; '.join(samples) or 'all filings'}. Of those questions, "
        f"{int(fb_board.n.max())} are on the held-out half (the others chose the baselines), "
        "and they come from a few companies: questions about one filing move together, so "
        "these intervals, which resample single questions, are if anything too narrow. "
        f"Of the {n_pages:,.0f} page chunks, {cut:,} are longer than MiniLM's window of "
        f"`256` tokens: dense search reads only their start. The best span recall on the board "
        f"is {fb_board.recall.max():.1%} and the best page hit "
        f"{fb_board.page_hit.max():.1%}: every configuration misses most of the evidence."))
    fb_board["chunks"] = fb_board.configuration.map(lambda c: sizes.get(c, {}).get("n_chunks"))
    shown = {"configuration": "configuration", "n": "n", "recall": f"recall@B{BUDGET}",
             "recall_low": "low", "recall_high": "high", "pass": f"pass@B{BUDGET}",
             "page_hit": f"page_hit@B{BUDGET}", "chunks": "chunks"}
    display(percent_table(fb_board[list(shown)].rename(columns=shown), counts=["n", "chunks"]))
    shown_as = {"recall": f"recall@B{BUDGET}", "recall_low": "low", "recall_high": "high"}
    fig = ranked_intervals(
        fb_board.rename(columns={"configuration": "strategy", **shown_as}),
        value=f"recall@B{BUDGET}", low="low", high="high", top=len(fb_board),
        highlight=lambda s: s.rsplit("+", 1)[0] in {c.label for c in simple_baselines(True)},
        title=f"FinanceBench sample, {int(fb_board.n.max())} held-out questions (orange: "
              f"simple baselines, blue: the router;\ndotted: the best baseline on the "
              f"held-out half, read after the fact)")
    show_figure(fig, "10_financebench_board")
    held_best = max((r for r in board(runs, "financebench", BUDGET) if r["baseline"]),
                    key=lambda r: r["recall"])
    display(Markdown(
        f"The dotted line is the best simple baseline on the held-out half "
        f"({held_best['configuration']}, {held_best['recall']:.1%}): it is read after the "
        "fact, so no choice is made from it. The comparisons below set ragkit's chunker "
        "against the baseline picked on the tune half under the same retrieval, which can "
        "sit well below that line."))
else:
    print("no FinanceBench rows in these results (ragkit bench design --benchmarks "
          "financebench writes them; the smoke profile has none)")

# %% [markdown]
# One question, to see what the numbers count: the held-out question on which one chunk per
# page does best against the router under dense search, with the gold evidence marked and
# what each put first.

# %%
from ragkit.evaluate.runs import Metric
from ragkit.report import budget_reading, contrast, hit_text, hits_table, load_hits, saved_hits
from ragkit.report.pdf_lesson import board_place, fiscal_year_note, pass_reading, stack_reading
from ragkit.text.tokens import count_tokens

by_label = {r.config.label: r for r in runs}
pair = ("pages+dense", "router+dense")
if fb is not None and all(p in by_label for p in pair):
    qid = contrast(by_label[pair[0]], by_label[pair[1]], Metric("recall", BUDGET).column)
    if qid is None:
        print(f"{pair[0]} is above {pair[1]} on no held-out question")
    else:
        q = {x.id: x for x in fb.queries}[qid]
        print(f"{q.id} ({q.metadata['company']}, {q.metadata['doc_name']}): {q.text}")
        print(fiscal_year_note(fb.docs_by_id()[q.metadata["doc_name"]], q.text), "\n")
        hits = load_hits()
        for label in pair:
            got = by_label[label].values(Metric("recall", BUDGET).column, "all")[q.id]
            print(f"== {label}: span recall@B{BUDGET} {got:.0%} on this question")
            print(hit_text(hits, by_label[label].name, q, fb.docs_by_id(), lines=8), "\n")
else:
    print("FinanceBench's filings or rows are not here; nothing to show")

# %% [markdown]
# What that contrast depends on: the length of FinanceBench's gold passages against the
# chunks' sizes; and what the stack, which reads a long chunk in windows, does with pages,
# read from the saved ranking of the same question (`saved_hits`, packed again to the budget).

# %%
if fb is not None and all(p in by_label for p in pair) and qid is not None:
    gold_tokens = sorted(count_tokens(fb.docs_by_id()[g.doc_id].text[g.start:g.end])
                         for x in fb.queries for g in x.gold)
    got = {label: by_label[label].values(Metric("recall", BUDGET).column, "all")[q.id]
           for label in pair}
    scored = int((by_label[pair[0]].values(Metric("recall", BUDGET).column, "held-out") > 0).sum())
    print(f"FinanceBench's gold passages are long: median {gold_tokens[len(gold_tokens) // 2]:,}"
          f" cl100k tokens, {sum(t > 256 for t in gold_tokens)} of {len(gold_tokens)} over "
          f"`256`. On this question the whole page collects {got[pair[0]]:.0%} of such a "
          f"passage and the router's chunk, which starts inside it, {got[pair[1]]:.0%}; "
          f"this question was chosen for that contrast, and over the board "
          f"{board_place(board(runs, 'financebench', BUDGET), pair[0])}"
          + (f"; it is the only held-out question on which {pair[0]} scores above 0."
             if scored == 1 else "."))
    print(stack_reading(found, "pages", BUDGET))
    if "pages+stack" in by_label:  # the same question under the stack, packed again from its hits
        col = Metric("recall", BUDGET).column
        stack_hits = saved_hits(hits, by_label["pages+stack"].name, q.id, fb.docs_by_id())
        held = by_label["pages+stack"].values(col, "held-out")
        packed = hits_table(q, stack_hits, k=3, budgets=(BUDGET,))
        other = stack_hits[0].chunk.doc_id != q.metadata["doc_name"]
        print(f"Under pages+stack on this question {budget_reading(packed, BUDGET)}"
              f" (rank 1 is a page of {stack_hits[0].chunk.doc_id}"
              + (", another filing: every question is searched over all the filings of the "
                 "measured sample, and this one names no company" if other else "")
              + "): span recall "
              f"{by_label['pages+stack'].values(col, 'all')[q.id]:.0%}. A page whose tokens fill "
              f"most of the budget leaves no room for a second; pages+stack has span recall "
              f"above 0 on {int((held > 0).sum())} of {len(held)} held-out questions.")

# %% [markdown]
# What pass@B (the share of gold passages wholly inside the context) can reach on this board,
# from the same passages' lengths.

# %%
if fb is not None and all(p in by_label for p in pair) and qid is not None:
    held_out = set(by_label[pair[0]].values(Metric("pass", BUDGET).column, "held-out").index)
    print(pass_reading(board(runs, "financebench", BUDGET),
                       [count_tokens(fb.docs_by_id()[g.doc_id].text[g.start:g.end])
                        for x in fb.queries if x.id in held_out for g in x.gold], BUDGET))

# %% [markdown]
# One factor at a time: ragkit's router against the best of every simple baseline measured
# under the same retrieval (chosen on the tune half, read on the held-out half), at each
# budget, and the stack against dense search on the same chunks. Read the pick column with the
# last one: a baseline chosen on the tune half that ranks low on the held-out half is an easy
# opponent there, so one comparison against it says little.

# %%
from ragkit.report.pdf_lesson import weak_pick_findings, zero_bounds

found = effects(runs)
sections = guide.sections(found, level=3).split("\n### ") if found else []
if found:  # the first table: which chunker, under each retrieval
    display(Markdown(sections[0]))
    for line in weak_pick_findings([e for e in found if e.benchmark == "financebench"]):
        display(Markdown(f"**Read with the pick column:** {line}"))

# %% [markdown]
# The second table: the stack against dense search on the same chunks (and the encoder,
# which this design does not vary); below it, how to read the bounds that print as zero.

# %%
if found:
    display(Markdown("\n".join("### " + x for x in sections[1:])))
    print(zero_bounds([e for e in found if e.benchmark == "financebench"]))

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
print("header kept for gross profit only:",
      ", ".join(both.chunker[both["header with it gross profit"]
                             & ~both["header with it deferred revenue"]]) or "none")

# %% [markdown]
# 2. **Another budget.** Read the board at `512` and at `2,048` tokens. Does the leading
#    configuration change?

# %%
leaders = pd.DataFrame([{"budget": b, **{k: v for k, v in board(runs, "financebench", b)[0].items()
                                         if k in ("configuration", "recall", "recall_low",
                                                  "recall_high", "n")}}
                        for b in (512, 1024, 2048)]) if runs else pd.DataFrame()
percent_table(leaders.rename(columns={"recall": "recall@B", "recall_low": "low",
                                      "recall_high": "high"}),
              shares=["recall@B", "low", "high"], counts=["budget", "n"]) \
    if len(leaders) else leaders

# %% tags=["answers"] jupyter={"source_hidden": true, "outputs_hidden": true}
# Answer to exercise 2 (expand to read): whether the leaders' intervals overlap. When they do,
# a change of leader is no evidence of a change.
if len(leaders):
    overlap = leaders.recall_low.max() <= leaders.recall_high.min()
    print(f"{leaders.configuration.nunique()} different leaders over the three budgets; their "
          f"intervals {'overlap' if overlap else 'do not all overlap'}")

# %%
print(rec.save())

# %%
from ragkit.report import effect_decisions, guide_findings, ranked_closing
from ragkit.report.pdf_lesson import header_answer, table_reading, weak_pick_findings

findings = [f"On the course's sample filing, {len(kept)} of {len(table)} chunkers hand the "
            f"model the deferred-revenue row with its table's header row: "
            f"{', '.join(kept['chunker'])}."]
chunks = {c: v["n_chunks"] for c, v in sizes.items() if c.endswith("+dense")} if runs else {}
if chunks:
    findings.append("Chunks to embed and index on the FinanceBench sample (the cost that grows "
                    "with the corpus): " + ", ".join(
                        f"{c.removesuffix('+dense')} {n:,.0f}"
                        for c, n in sorted(chunks.items(), key=lambda x: x[1])) + ".")
findings += weak_pick_findings(found)  # a measurable difference against an easy pick, said
answer, cost = header_answer(found, BUDGET, chunks) if runs else ("", "")
if answer:  # the opening question, one factor at a time (paired, on the held-out half)
    findings.insert(0, answer[0].upper() + answer[1:])
    display(Markdown(f"**The opening question, answered:** {answer}{cost}"))
    if fb is not None:  # which held-out questions are table questions needs the filings' text
        display(Markdown(table_reading(fb, found, by_label, BUDGET)))
    else:
        print("The reading by table question needs FinanceBench's files (see above).")
display(Markdown(ranked_closing(
    effect_decisions([e for e in found if e.benchmark == "financebench"], BUDGET),
    none="no complete FinanceBench effect in these results (`ragkit bench design "
    "--benchmarks financebench` writes them; the smoke profile has none)",
    findings=findings + guide_findings(found, BUDGET))))
