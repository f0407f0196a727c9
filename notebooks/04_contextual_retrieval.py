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
# # 04 · Contextual retrieval, with models that fit on a laptop
#
# Terms: every metric, word and seed essay, defined once: [glossary](../docs/glossary.md).
#
# Anthropic's "Contextual Retrieval" (2024) has an LLM write a sentence or two situating each
# chunk in its document, embeds preamble + chunk, adds BM25 over the same text, and reranks
# with a cross-encoder. It reports top-20 failure rates falling by 35 % (contextual
# embeddings), 49 % (+ contextual BM25) and 67 % (+ reranking). Seed 002 credits the preamble
# alone: Anthropic "reported ~49% reduction in failed retrievals on their benchmark just from
# that step".
#
# **The question this notebook answers:** with preambles from generators that need no API,
# and the bundled MiniLM encoder, do contextual preambles cut retrieval failures, on
# Anthropic's own code set and on the course corpus? The generators:
#
# - **structural**: title + heading path + the document's first paragraph (no model);
# - **extractive**: the document's sentences most similar to the chunk (no LLM);
# - **gemma-3-270m**: a small local LLM (llama.cpp, greedy), the document first in the
#   prompt so its evaluation is reused across the document's chunks;
# - **SmolLM2-135M-Instruct**: a second, chat-tuned local LLM.
#
# LLM preambles are read from the committed caches (`data/cache/preambles/`), so this notebook
# needs neither a key nor hours of CPU. Where a cache covers only some documents, the LLM rows
# say how many, and the subset's own baseline is measured alongside.
#
# Anthropic's last stage is a reranker: a cross-encoder that reads question and chunk
# together. Offline, ragkit's last stage rescores the top candidates with EmbeddingGemma used
# as a **bi-encoder** (question and chunk embedded separately, as in the first stage, only with
# a larger model). That is not the article's reranker. The tables keep the article's stage
# name, `contextual embeddings + BM25 + rerank`, and the results rows record which kind of
# model did it (`reranker: bi-encoder`). It runs when `RAGKIT_GEMMA_DIR` is set (or a
# cross-encoder when `RAGKIT_RERANK_MODEL` is); otherwise that stage is not run.

# %%
import pandas as pd
from IPython.display import Markdown, display

from ragkit.config import get_settings, seed_everything
from ragkit.report import quiet_cells

quiet_cells()  # each cell's warnings as one line per kind
seed_everything()
settings = get_settings()

# %%
from functools import partial

from ragkit.embed import Embedder
from ragkit.evaluate import load
from ragkit.experiments import contextual_table
from ragkit.experiments.contextual import contextual_stages, with_intervals
from ragkit.report import Recorder, percent_table

rec = Recorder("04_contextual_retrieval")
embedder = Embedder()
rescore_model = settings.rerank_model or (str(settings.gemma_dir) if settings.gemma_dir else None)
KS = (5, 10, 20)
LLMS = ["gemma", "smollm2"]             # preambles read from the committed caches
GENERATORS = ["structural", "extractive"]
# The rescoring stage runs a 300M encoder over the top 50 of every question, embedding every
# candidate's preamble + chunk: minutes per generator on a CPU, so only for the LLM generators.
measure = partial(contextual_table, embedder=embedder, recorder=rec, ks=KS,
                  rerank_model=rescore_model, rerank_for=LLMS, rerank_candidates=50)


def show_table(df, label=None, against_label=None):
    """The table, with each row's paired Pass@20 difference from basic retrieval (points, 95 %
    interval) when the chunks' `label` is given."""
    if label is not None:
        df = with_intervals(df, rec.frames(), label, against_label=against_label)
    return percent_table(df, shares=[c for c in df.columns if c.startswith(("pass", "failure"))])


# %% [markdown]
# ## What the generators write
# Before measuring anything, read some preambles. Below, a few course chunks (`200`-token
# recursive chunks, the ones the LLM preambles were generated for), each with the preamble
# every generator gives it.

# %%
from ragkit.chunkers import RecursiveChunker
from ragkit.contextualize import (contextualize, make_contextualizer, preamble_quality,
                                  preamble_samples, samples_text)
from ragkit.experiments import COURSE_CHUNKER

course = load("course").for_profile()
recursive_chunks = RecursiveChunker(**COURSE_CHUNKER).chunk_all(course.documents)
samples = preamble_samples(course, recursive_chunks, GENERATORS + LLMS, n=4)
print(samples_text(samples))

# %% [markdown]
# The structural and extractive preambles are pieces of the document itself: the title, the
# heading path, a sentence from elsewhere. The LLM preambles are the thing to judge: in the
# committed caches, how many are flagged, repeated word for word, or echo the prompt? (How fast
# each generator writes them is measured by `ragkit bench context-speed`, not by this notebook:
# here the LLM preambles come from the caches.)

# %%
quality = preamble_quality("course", LLMS)
display(percent_table(quality, shares=["flagged", "repeated", "echoes the prompt"],
                      counts=["preambles", "median words"]))
weak = quality.set_index("generator")
display(Markdown("\n".join(
    f"- **{g}**: {r['echoes the prompt']:.0%} of its {r.preambles:.0f} course "
    f"preambles open with the prompt's own words (\"This chunk …\", \"This document …\"), "
    f"{r.repeated:.0%} are "
    f"repeated word for word elsewhere, {r.flagged:.0%} are flagged (empty, copied from the "
    f"chunk, looping or cut); the median preamble is {r['median words']:.0f} words."
    for g, r in weak.iterrows())))
echo = weak["echoes the prompt"].min() if len(weak) else 0.0
display(Markdown(
    "Read plainly, these LLM preambles are weak: most of them restate the prompt and name the "
    "document's topic in general words, as the samples above show. Any effect they have below "
    "is the effect of a weak preamble, not of what Anthropic's Claude writes."
    if echo > 0.5 else
    "Most LLM preambles do not simply restate the prompt; judge them by the samples above."))

# %% [markdown]
# What a preamble costs: the time to write it, read from the rows `ragkit bench context-speed`
# saved (one course document's chunks, on the machine that ran it), and the tokens it adds to
# every chunk the encoder reads, counted here with MiniLM's tokenizer on the course chunks.

# %%
from ragkit.report import load_results

bench_rows = load_results()
speed = bench_rows[(bench_rows.experiment == "context_speed")
                   & (bench_rows.metric == "preambles_per_second")]
speed = speed.assign(mode=[p.get("mode") or "" for p in speed.params]).drop_duplicates(
    ["strategy", "mode"], keep="last")
# an LLM is timed twice; ragkit's generator reuses the document's KV cache, so that row counts
speed = speed[speed["mode"].isin(["", "kv_reuse"])]
rate = dict(zip(speed.strategy, speed.value))
body_tokens = embedder.count_tokens([c.text for c in recursive_chunks])
added = {g: pd.Series(embedder.count_tokens([c.embedding_text() for c in contextualize(
             course.documents, recursive_chunks, make_contextualizer(g))])) - body_tokens
         for g in GENERATORS}
display(Markdown("\n".join(
    [f"- **{g}**: " + (f"{rate[g]:.3g} preambles a second "
                      f"({len(recursive_chunks) / rate[g]:.3g} s for the "
                      f"{len(recursive_chunks)} course chunks)" if g in rate else
                      "no timing row in `results/`")
     + f"; it adds a median {added[g].median():.0f} MiniLM tokens to a chunk of median "
       f"{pd.Series(body_tokens).median():.0f}, so every chunk costs that much more to embed."
     for g in GENERATORS]
    + [f"- **{g}**: " + (f"{rate[g]:.3g} preambles a second, the document's KV cache reused "
                        f"({len(recursive_chunks) / rate[g] / 60:.0f} min for the "
                        f"{len(recursive_chunks)} course chunks)" if g in rate else
                        "no timing row in `results/` (the bench needs `llama-cpp-python`, not "
                        "installed where it last ran); its preambles here come from the cache")
       for g in LLMS])))

# %% [markdown]
# ## What a preamble does to a ranking
# The mechanism on the same course chunks: search every course question over the chunks
# alone, then over the chunks with their structural preamble, and read the rank of the first
# chunk that touches the gold. The preamble goes in the chunk's `prefix`, so the spans scored
# stay the same; `placement` says whether the encoder reads it before the chunk or after it.
# MiniLM reads at most `256` tokens, so a preamble placed after a long chunk can fall beyond
# what it reads. Below: how many questions each placement moves up and down, then the
# question the preamble (before) helps most and the one it hurts most: the gold chunk as the
# encoder reads it, its preamble shown as `[prefix]` and the answer between ⟦ and ⟧.

# %%
from ragkit.contextualize import StructuralContextualizer
from ragkit.evaluate import overlaps
from ragkit.report import gold_ranks, hits_text, preamble_note
from ragkit.retrieve import DenseRetriever

asked = [q for q in course.queries if q.gold]
with_preamble = contextualize(course.documents, recursive_chunks, StructuralContextualizer())


def ranked(chunks, placement="before"):
    hits = DenseRetriever(chunks, embedder, placement).search([q.text for q in asked],
                                                               len(chunks))
    return gold_ranks(asked, hits), dict(zip((q.id for q in asked), hits))


(alone, _), (before, before_hits), (after, _) = (
    ranked(recursive_chunks), ranked(with_preamble), ranked(with_preamble, "after"))
ranks = pd.DataFrame({"alone": alone, "before": before, "after": after})
display(pd.DataFrame({p: {"gold ranks higher": (ranks[p] < ranks.alone).sum(),
                          "lower": (ranks[p] > ranks.alone).sum(),
                          "same": (ranks[p] == ranks.alone).sum()} for p in ("before", "after")}).T)
gain, by_id = ranks.alone - ranks.before, {q.id: q for q in asked}
for q in (by_id[gain.idxmax()], by_id[gain.idxmin()]):
    at = int(ranks.before[q.id])
    hit = before_hits[q.id][at - 1]  # the first chunk touching the gold, preamble included
    print(f"{q.id}: gold rank {ranks.alone[q.id]:.0f} alone, {at} with the preamble "
          f"before · {q.text}\n  why: {preamble_note(q, hit.chunk)}\n"
          + hits_text(q, [hit], k=1, lines=4).replace("── #1 ", f"── #{at} ", 1) + "\n")

# %% [markdown]
# ## Anthropic's set, upstream chunks
# Their own chunks, so these rows sit beside the published ones (voyage-2 and Claude 3 Haiku
# there; MiniLM and the local generators here). Pass@k is the share of gold units wholly in
# the top k; the failure reduction is `1 − (1 − pass@20) / (1 − basic pass@20)`. The last
# column is each row's Pass@20 minus basic retrieval's on the same questions, in points, with
# its paired 95 % interval: the failure reduction is a ratio, and on a high basic Pass@20 a
# small change in points reads as a large one there.

# %%
from ragkit.contextualize import cached_documents

anthropic = load("anthropic").for_profile()
covered = {g: cached_documents("anthropic", anthropic.documents, anthropic.chunks, g)
           for g in LLMS}
full_cover = [g for g in LLMS if len(covered[g]) == len(anthropic.documents)]
table = measure(anthropic, anthropic.chunks, GENERATORS + full_cover, label="upstream chunks")
display(Markdown("LLM preambles cached for every file: " + (", ".join(full_cover) or "none")
                 + f" ({len(anthropic.documents)} files, {len(anthropic.chunks)} chunks)."))
show_table(table, "upstream chunks")

# %% [markdown]
# ### What BM25 adds, on one question
# The control row `BM25 + embeddings, no preamble` fuses the dense ranking with a BM25 ranking
# of the same chunks (weighted reciprocal rank, `weights=(0.8, 0.2)`, dense first). Below, the
# question of Anthropic's set where that fusion moves the gold up the most from outside the
# dense top `20`: each ranking's top hit, then the first hit touching the gold, the gold
# between ⟦ and ⟧.

# %%
from ragkit.experiments import CONTEXT_STAGES
from ragkit.retrieve import matched_terms

plain = contextual_stages(anthropic.chunks, embedder, "after")
dense, fused = plain[CONTEXT_STAGES[0]], plain[CONTEXT_STAGES[1]]
asked_a = [q for q in anthropic.queries if q.gold]
by_way = {name: r.search([q.text for q in asked_a], 150) for name, r in
          (("dense", dense), ("BM25", fused.bm25), ("fused", fused))}
way_ranks = pd.DataFrame({name: gold_ranks(asked_a, hs) for name, hs in by_way.items()}).fillna(151)
lifted = way_ranks[(way_ranks.dense > 20) & (way_ranks.fused <= 2)]
case = (lifted.dense - lifted.fused).idxmax() if len(lifted) else (way_ranks.dense
                                                                     - way_ranks.fused).idxmax()
i, q = next((i, q) for i, q in enumerate(asked_a) if q.id == case)
print(f"{q.id} · {q.text}\n" + " · ".join(
    f"{name}: gold rank {way_ranks.at[case, name]:.0f}" + (" (not in the top 150)"
                                                           if way_ranks.at[case, name] > 150
                                                           else "") for name in by_way))
for name, hs in by_way.items():  # the top hit, then the first hit touching the gold
    at = way_ranks.at[case, name]
    shown = hs[i][:1] + ([hs[i][int(at) - 1]] if 1 < at <= len(hs[i]) else [])
    print(f"══ {name}\n" + "\n".join(
        hits_text(q, [h], k=1, lines=3).replace("── #1 ", f"── #{r} ", 1)
        for r, h in zip((1, int(at)), shown)))
gold_hit = next(h for h in by_way["fused"][i] if overlaps(h.chunk, q.gold, q.copies))
print("BM25 matches the question's words in the gold chunk: "
      + ", ".join(matched_terms(q.text, gold_hit.chunk.text,
                                     getattr(fused.bm25, "tokens", "words"))[:8]))

# %% [markdown]
# ### LLM preambles cached for part of the set
# A generator whose cache covers only some files is measured on exactly those files, with the
# basic and structural rows re-measured on the same subset so the comparison is fair.

# %%
llm_tables = []
partial_cover = [g for g in LLMS if g not in full_cover and covered[g]]
for g in partial_cover:
    subset = anthropic.restrict(covered[g])
    if settings.smoke:
        subset = subset.restrict([d.id for d in subset.documents[:3]])
    display(Markdown(f"{g}: preambles cached for **{len(covered[g])}** of "
                     f"{len(anthropic.documents)} files ({len(subset.chunks)} chunks, "
                     f"{len(subset.queries)} queries in this run)."))
    llm_tables.append(measure(subset, subset.chunks, [g, "structural"],
                              label=f"upstream chunks · {g} subset").assign(subset=g))
    llm_tables[-1] = with_intervals(llm_tables[-1], rec.frames(), f"upstream chunks · {g} subset")
show_table(pd.concat(llm_tables, ignore_index=True)) if llm_tables else None

# %% [markdown]
# ### ragkit's code chunker on the same files
# Upstream's chunks are fixed; ragkit's `code` chunker cuts along functions, classes and
# methods, where the author left blank lines, with the enclosing signatures as prefix (its
# default size and overlap, `CodeChunker(size=2000, overlap=400)`, were tuned inside ragkit's
# retrieval stack by `ragkit bench code`). Scored by the gold spans (a hit contains the whole gold unit), so these
# rows answer "which chunker", not "which row of the article". Here the first stage is the
# article's plain dense search, which reads only the first `max_seq_length` tokens of such a
# chunk (the flags say how many); `ragkit bench code` compares the chunkers inside the stack, whose dense
# search reads long chunks in windows. One generator (structural) is measured here; each
# generator re-embeds every chunk.
#
# Where the preamble goes matters on these chunks. Upstream appends the context after the
# chunk, and MiniLM truncates its input at `max_seq_length` tokens: a chunk whose body alone
# fills that window leaves nothing of an appended preamble for the encoder to read. The next
# cell counts such chunks with the encoder's own tokenizer (`ragkit.report.encoder_overflow`),
# and places the preamble *before* the code chunk for this comparison.

# %%
from ragkit.chunkers import REGISTRY
from ragkit.report import encoder_overflow

code_chunks = REGISTRY["code"]().chunk_all(anthropic.documents)
overflow = {name: encoder_overflow(chunks, embedder)
            for name, chunks in (("code", code_chunks), ("upstream", anthropic.chunks))}
display(Markdown("\n".join(
    f"- {o['over']} of {o['chunks']} {name} chunks fill {embedder.name}'s {o['limit']}-token "
    "input with their body alone: a preamble placed after them is cut before the encoder "
    "reads it." for name, o in overflow.items())
    + f"\n\nThe truncation warning under the table counts something else: the whole text the "
    f"encoder is given, the code chunk's own prefix (its enclosing signatures) included, and "
    f"{sum(n > embedder.max_tokens for n in embedder.count_tokens([c.embedding_text() for c in code_chunks]))}"
    f" of {len(code_chunks)} code chunks exceed the limit that way."
    + "\n\nThe code chunks below carry the preamble before the chunk (`placement=\"before\"`), "
    "where the encoder reads it; the upstream rows above keep the article's order."))
show_table(measure(anthropic, code_chunks, ["structural"], label="code chunks",
                   placement="before"), "code chunks")

# %% [markdown]
# ## Before or after the chunk?
# Upstream appends the context after the chunk; ragkit's default puts a prefix before it.
# The structural preamble, contextual embeddings only, both ways.

# %%
placement = pd.concat([
    measure(anthropic, anthropic.chunks, ["structural"], placement=p, with_basic=False,
            label=f"upstream chunks · {p}").head(1).assign(placement=p)
    .pipe(with_intervals, rec.frames(), f"upstream chunks · {p}", against_label="upstream chunks")
    for p in ("before", "after")], ignore_index=True)
show_table(placement)

# %% [markdown]
# ## The course corpus
# Scored by gold spans: a chunk "finds" a gold unit when it contains all of it. The LLM
# preambles were generated for the recursive chunks above (`ragkit preambles`), so every
# generator is measured on those; ragkit's **router chunks** follow with the model-free
# generators (the router is notebook 02's per-document-class chunker: it picks a chunker for
# each document by its kind). Router chunks already carry a heading path in their prefix, so a
# structural preamble repeats much of what they have. As in the upstream rows, the preamble is
# placed after the chunk here (the article's order; only the code chunks above carry it
# before). The last column, Pass@20 minus basic in points with its interval, is the one to read
# where basic Pass@20 is already high.

# %%
from ragkit.chunkers import Router

course_llms = [g for g in LLMS if len(cached_documents("course", course.documents,
                                                       recursive_chunks, g))
               == len(course.documents)]
router_chunks = Router().chunk_all(course.documents)
course_table = pd.concat([
    measure(course, recursive_chunks, GENERATORS + course_llms, label="recursive chunks")
    .pipe(lambda t: with_intervals(t, rec.frames(), "recursive chunks")),
    measure(course, router_chunks, GENERATORS, label="router chunks", tag="router chunks")
    .pipe(lambda t: with_intervals(t, rec.frames(), "router chunks"))],
    ignore_index=True)
show_table(course_table)

# %% [markdown]
# ## Did the preamble help, configuration by configuration?
# Each generator's contextual embeddings against basic retrieval on the same chunks, on
# per-question Pass@20, with the paired 95 % interval. A positive difference means the
# preamble helped.

# %%
from ragkit.experiments import contextual_comparison
from ragkit.report import finding

frames = rec.frames()
configs = ([("upstream chunks", g) for g in GENERATORS + full_cover]
           + [(f"upstream chunks · {g} subset", x) for g in partial_cover
              for x in (g, "structural")]
           + [("code chunks", "structural")]
           + [("recursive chunks", g) for g in GENERATORS + course_llms]
           + [("router chunks", g) for g in GENERATORS])
helped = {(label, g): contextual_comparison(*frames, label, CONTEXT_STAGES[0], g)
          for label, g in configs}
display(Markdown("\n".join(
    "- " + finding(c, f"{g} preamble", "basic", f"Pass@20 ({label})")
    for (label, g), c in helped.items())))

# %% [markdown]
# The same comparisons as a chart: each dot is a generator's preamble against basic retrieval
# on the same chunks (points of Pass@20), its whisker the paired 95 % interval; a whisker that
# crosses the grey line at zero does not separate the two.

# %%
from ragkit.report import ranked_intervals, show_figure

forest = pd.DataFrame([{"configuration": f"{g} preamble · {label}", "diff": c.diff,
                        "low": c.low, "high": c.high} for (label, g), c in helped.items()])
fig = ranked_intervals(forest, value="diff", low="low", high="high", label="configuration",
                       top=len(forest), title="Contextual embeddings against basic retrieval",
                       xlabel="Pass@20 difference (points), mean and paired 95 % interval")
fig.axes[0].axvline(0, color="grey", lw=1)
show_figure(fig, "04_preamble_effects")

# %% [markdown]
# ## Did the article's numbers hold with local models?
# Each claim is decided by the rule declared in `ragkit.report.claims` before the numbers were read:
# Anthropic's full set with its own chunks, **one** generator (gemma-3-270m, the local LLM whose
# preambles cover every file), the top-20 failure rate (`1 − Pass@20`) against basic retrieval,
# and a paired 95 % interval over the queries. The other generators and two controls (plain
# embeddings + plain BM25 with no preamble at all, and the preamble's own share inside the
# hybrid) are sensitivity rows: they inform, they do not vote. Seed 002 attributes the
# article's hybrid result to the preamble alone; the first control shows how much of it BM25
# brings without any preamble.
#
# The verdicts (the glossary's words): **held**, the estimate is within a tenth of the claimed
# value (or past it) and its interval excludes zero; **consistent, not shown**, the interval
# holds the claimed value but the estimate is not near it, so the data neither refute nor show
# the claim; **not held**, anything else; **not measurable here**, no run could measure it
# (the reason is given). A row marked `(sensitivity)` informs and does not vote.

# %%
from ragkit.report import check_claims, claims_for, show

claims = check_claims(*rec.frames(), claims=claims_for("anthropic", "seed002-preamble"))
display(show(claims, brief=True))  # each control row once; the closing gives each reason
gemma_q = weak.loc["gemma"] if "gemma" in weak.index else None
display(Markdown(
    "Read these verdicts as verdicts on **local models**: the claims are decided with "
    "gemma-3-270m's preambles and " + embedder.name + " vectors, not the article's Claude 3 "
    "Haiku and voyage-2. "
    + (f"On the course, {gemma_q['echoes the prompt']:.0%} of gemma's preambles open with the "
       f"prompt's own words and {gemma_q.repeated:.0%} repeat another word for word (the "
       "quality table above), " if gemma_q is not None else "")
    + "so a *not held* says these preambles do not reach the article's numbers; it does not "
    "say that the article's own generator would not."))

# %% [markdown]
# ## Exercises
# 1. **Read more preambles.** Change `offset` (and `n`) below to read other chunks' preambles.
#    Look for one that names something the chunk does not: a product, a year, a section.
# 2. **A shorter structural preamble.** Set `budget` to `30` tokens (title and heading path,
#    hardly any first paragraph) and compare Pass@20 of contextual embeddings with the
#    structural row of the course table. Does the first paragraph help or hurt?
# 3. **One question, with and without preambles.** Pick a course question and look at its top
#    hits from plain chunks and from chunks carrying the structural preamble (shown as
#    `[prefix]`).

# %%
# Exercise 1: other chunks' preambles
offset, n = 100, 2
print(samples_text(preamble_samples(course, recursive_chunks, GENERATORS + LLMS, n=n,
                                    offset=offset)))

# %%
# Exercise 2: the structural generator with another budget (contextual embeddings only)
from ragkit.contextualize import contextualize, make_contextualizer
from ragkit.experiments import recall_at, run_experiment

budget = 100  # the default; try 30
short = contextualize(course.documents, recursive_chunks,
                      make_contextualizer("structural", budget=budget), placement="after")
out = run_experiment(course, embedder=embedder, chunks=short, placement="after", depth=20)
print(f"structural, budget {budget}: Pass@20 {recall_at(out, course.queries, [20])['pass@20']:.1%}")

# %%
# Exercise 3: one question, plain chunks and structural preambles
from ragkit.report import hits_text
from ragkit.retrieve import DenseRetriever

question = next(q for q in course.queries if q.gold)
print(question.id, question.text, "\n")
for units in (recursive_chunks, short):
    print(hits_text(question, DenseRetriever(units, embedder, "after").search(
        [question.text], 2)[0], k=2, lines=6), "\n")

# %% tags=["answers"] jupyter={"source_hidden": true, "outputs_hidden": true}
# Answers to the exercises (expand to read).
import re

from ragkit.evaluate import versus
from ragkit.report import finding, mean_ci

# 1. the names (capitalised words, numbers) each preamble of the chunks above holds and its
#    chunk does not: the ones a reader would check against the document
for r in preamble_samples(course, recursive_chunks, GENERATORS + LLMS, n=n, offset=offset,
                          width=None).itertuples():
    seen = set(re.findall(r"\w+", r.chunk.lower()))
    new = {g: sorted({w for w in re.findall(r"\b(?:[A-Z][a-z]\w+|\d{3,})\b", getattr(r, g))
                      if w.lower() not in seen and w not in ("This", "The", "These")})
           for g in GENERATORS + LLMS}
    print(f"1. {r.doc_id} · chars {r.chars}: " + "; ".join(
        f"{g} adds {', '.join(w[:6]) if w else 'no name'}" for g, w in new.items()))

passes = {}
for b in (100, 30):
    cut = contextualize(course.documents, recursive_chunks,
                        make_contextualizer("structural", budget=b), placement="after")
    o = run_experiment(course, embedder=embedder, chunks=cut, placement="after", depth=20)
    recall_at(o, course.queries, [20], per_query=True)
    passes[b] = o.values("pass@20").dropna()
    print(f"2. structural, budget {b}: Pass@20 {mean_ci(passes[b])} (95 % interval)")
print("   " + finding(versus(passes[30], passes[100]), "budget 30", "budget 100", "Pass@20"))
print(f"3. {question.id}: gold rank alone {ranks.alone.get(question.id):.0f}, with the structural "
      f"preamble before {ranks.before.get(question.id):.0f}, after "
      f"{ranks.after.get(question.id):.0f} "
      "(from the rank table at the top of this notebook)")

# %%
print(rec.save())

# %%
from ragkit.experiments import CONTROLS
from ragkit.report import Decision, claim_sentences, pct, ranked_closing
from ragkit.retrieve import detect_kind

placement_c = contextual_comparison(
    *frames, "upstream chunks · before", CONTEXT_STAGES[0], "structural",
    against=f"{CONTEXT_STAGES[0]} · structural · upstream chunks · after",
    against_label="upstream chunks · after")
hybrid_generator = "gemma" if "gemma" in full_cover else "structural"
preamble_share = contextual_comparison(*frames, "upstream chunks", CONTEXT_STAGES[1],
                                       hybrid_generator,
                                       against=f"{CONTROLS[0]} · upstream chunks")
code_vs_upstream = contextual_comparison(*frames, "code chunks", "basic",
                                         against_label="upstream chunks", metric="pass@5")
worse = [f"{label} ({g})" for (label, g), c in helped.items() if c.high < 0]
better = [f"{label} ({g})" for (label, g), c in helped.items() if c.low > 0]
untuned = "all questions; nothing here is tuned but the code chunker's size (`ragkit bench code`)"
per_generator = {}
for (label, g), c in helped.items():
    if "subset" not in label:  # a partial cover's rows compare a subset: they inform only
        per_generator.setdefault(g, {})[label] = c
write_cost = {g: f"{rate[g]:.3g} preambles a second to write"
              + (f", and a median {added[g].median():.0f} MiniLM tokens more to embed in every "
                 "chunk" if g in added else "") for g in rate}
decisions = [Decision(f"{g} preambles (contextual embeddings)",
                      "basic retrieval on the same chunks", "Pass@20", by, untuned,
                      embedder.name, write_cost.get(g, ""), over="chunking")
             for g, by in per_generator.items()]
# what BM25 fusion costs a new question, timed here on Anthropic's chunks: the dense search
# alone and fused with BM25, each question's vector computed afresh
from ragkit.experiments.design_costs import query_latency, uncached

timed_questions = [q.text for q in anthropic.queries[:41]]
latency = {name: query_latency(uncached(r, embedder), timed_questions)
           for name, r in (("dense", dense), ("fused", fused))}
fusion_cost = (f"{latency['fused']['query_p50_ms']:.1f} ms p50 per question against "
               f"{latency['dense']['query_p50_ms']:.1f} ms for the embeddings alone (upstream "
               f"chunks, {latency['fused']['n_timed']} questions timed in this run, top 10)")
fusion = {label: contextual_comparison(*frames, label, CONTROLS[0])
          for label in ("upstream chunks", "code chunks", "recursive chunks", "router chunks")}
decisions += [
    Decision("BM25 fused with the embeddings (no preamble)", "the embeddings alone",
             "Pass@20", fusion, untuned, embedder.name, fusion_cost, over="chunking",
             note=f"the largest gain is on code chunks, {overflow['code']['over']} of "
             f"{overflow['code']['chunks']} of which fill {embedder.name}'s input with their "
             "body alone, so dense search reads only their start; on the other chunkings it is "
             + ", ".join(f"{100 * c.diff:+.1f} on {label}" for label, c in fusion.items()
                         if label != "code chunks")
             if max(fusion, key=lambda label: fusion[label].diff) == "code chunks" else ""),
    Decision("a preamble before the chunk", "the same preamble after it", "Pass@20",
             {"Anthropic's set, structural": placement_c}, untuned, embedder.name),
    Decision(f"the {hybrid_generator} preamble inside embeddings + BM25",
             "embeddings + BM25 without a preamble", "Pass@20",
             {"Anthropic's set": preamble_share}, untuned, embedder.name),
]
cost_line = ("What a preamble costs to write (`ragkit bench context-speed` rows): " + "; ".join(
    f"{g} {rate[g]:.3g} a second" for g in GENERATORS + LLMS if g in rate)
    + "".join(f"; no timing row for {g}" for g in LLMS if g not in rate)
    + ". To embed: " + ", ".join(f"{g} adds a median {added[g].median():.0f} MiniLM tokens "
                                  "a chunk" for g in GENERATORS) + ".")
display(Markdown(ranked_closing(decisions, [
    cost_line,
    *claim_sentences(claims),
    f"The claims above are decided with gemma-3-270m's preambles and {embedder.name} vectors, "
    "not the article's Claude 3 Haiku and voyage-2: a verdict here says whether these local "
    "models reach the article's numbers, not whether the article's own setup does.",
    "How much of the hybrid's gain is the preamble's: "
    + finding(preamble_share, f"{hybrid_generator} preamble + BM25", "BM25 without a preamble",
              "Pass@20 (Anthropic's set)").replace("No measurable", "no measurable"),
    f"Contextual embeddings against basic retrieval, Pass@20, in {len(helped)} configurations: "
    f"the preamble measurably helped in {len(better)}"
    + (f" ({', '.join(better)})" if better else "")
    + f", measurably hurt in {len(worse)}" + (f" ({', '.join(worse)})" if worse else "")
    + f", and made no measurable difference in {len(helped) - len(better) - len(worse)}.",
    finding(helped["router chunks", "structural"], "structural preamble", "basic",
            "Pass@20 (course, router chunks, contextual embeddings)"),
    *[f"The {g} preambles: {pct(r['echoes the prompt'])} open with the "
      f"prompt's words, {pct(r.repeated)} repeat another preamble word for word, "
      f"{pct(r.flagged)} are flagged." for g, r in weak.iterrows()],
    *[f"{o['over']} of {o['chunks']} {name} chunks fill {embedder.name}'s {o['limit']}-token "
      "input with their body alone, so a preamble placed after them is not read"
      + (" (the code chunks' preamble was placed before them)." if name == "code" else ".")
      for name, o in overflow.items()],
    finding(code_vs_upstream, "ragkit's code chunks", "upstream chunks",
            "Pass@5 (Anthropic's set, basic retrieval)"),
    finding(placement_c, "preamble before the chunk", "preamble after it",
            "Pass@20 (Anthropic's set, structural, contextual embeddings)"),
    (f"The last stage ran as {detect_kind(rescore_model)} rescoring with `{rescore_model}`."
     if rescore_model else
     "The last stage (bi-encoder rescoring with EmbeddingGemma, or a cross-encoder) was not "
     "run in this run: neither `RAGKIT_GEMMA_DIR` nor `RAGKIT_RERANK_MODEL` is set."),
])))
