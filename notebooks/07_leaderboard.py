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
# # 07 · The leaderboard: everything, on the same harness
#
# Terms: every metric, word and seed essay, defined once: [glossary](../docs/glossary.md).
#
# Seed 002 puts the rule plainly: "You cannot say "this chunker is better" without
# measurements." Every notebook so far wrote its numbers as rows of one schema. This one reads
# them all and asks the question a practitioner ends with: **at an equal context budget, with
# one factor changed at a time, does ragkit's own chunker beat the best simple splitter
# (fixed-size, recursive, LangChain's or chonkie's) under the same retrieval, how much do the
# retrieval and the encoder move the same number, and at what cost?** The boards first rank
# every run of the course together, the fixes of notebooks 02–06 (breadcrumbs, preambles, late
# chunking, parent-child) among them; there several factors differ between rows, so a place on
# a board is not the effect of any one fix. It adds a few combinations, checks each
# quantitative claim the course quoted, sets
# up one generation experiment (does the position of the evidence in the prompt matter?),
# shown only where a local model can answer from the gold passage itself, and ends with the
# decision guide, regenerated from the rows on every `make reproduce`.
#
# Names used from here on: **the router** is ragkit's own chunker (notebook 02: one chunker per
# document class); **dense** is embedding search alone; **the stack** is dense search fused
# with BM25 by reciprocal rank and read in windows (built step by step in the section on the
# stack below); **financebench** is the fourth benchmark, PDF filings (notebook 10);
# **upstream** chunks are Anthropic's own chunks of its code set, which are also its gold
# units, so a row on them is close to an oracle for pass@k;
# **bench_design** is the script (`ragkit bench design`) that ran every chunker under both
# retrievals, one factor at a time, and **bench_code** the one that tuned the code chunker on
# Anthropic's set (`ragkit bench code`); **bm25 words** and **bm25 identifiers** are BM25 over
# plain words or over words with code identifiers split (`parseUserId` also as `parse`,
# `user`, `id`).

# %%
import pandas as pd
from IPython.display import Markdown, display

from ragkit.config import get_settings, seed_everything

from ragkit.report import quiet_cells

quiet_cells()  # each cell's warnings as one line per kind
seed_everything()
settings = get_settings()
BUDGET = 1024  # the headline context budget: cl100k tokens that reach the model

# %% [markdown]
# ## Combinations
# Structure chunking (notebook 02) as the base, then three rows that each add one step to the
# row before: path + title breadcrumbs, a structural preamble (notebook 04, no LLM), BM25 fused
# with the embeddings. Two more rows are *not* stacked on those: late chunking (notebook 05) and
# parent-child retrieval (notebook 06), each applied to plain structure chunks. Metadata
# filters (notebook 03) are not in the stack. MiniLM throughout; recall at a budget of `1024`
# cl100k tokens and at `k = 5`.

# %%
from ragkit.chunkers import StructureChunker
from ragkit.contextualize import StructuralContextualizer, contextualize
from ragkit.embed import Embedder
from ragkit.evaluate import load
from ragkit.experiments import run_experiment
from ragkit.report import Recorder, percent_frame
from ragkit.retrieve import LateDenseRetriever, ParentChildRetriever

rec = Recorder("07_leaderboard")
embedder = Embedder()
K = 5
metrics = ["recall@B1024", "pass@B1024", "iou@B1024", "recall", "pass@k", "ndcg@10"]
combo_rows, combo_outcomes = [], {}
for name in ("course",) if settings.smoke else ("course", "chroma", "anthropic"):
    bench = load(name).for_profile()
    plain = StructureChunker(breadcrumb="none").chunk_all(bench.documents)
    crumbs = StructureChunker(breadcrumb="path+title").chunk_all(bench.documents)
    context = contextualize(bench.documents, crumbs, StructuralContextualizer(budget=60))
    runs = {
        "structure": dict(chunks=plain),
        "structure + breadcrumbs": dict(chunks=crumbs),
        "+ structural preamble": dict(chunks=context),
        "+ hybrid BM25": dict(chunks=context, retriever="hybrid"),
        "late · structure": dict(chunks=plain, retriever=LateDenseRetriever(
            plain, bench.documents, embedder)),
        "parent-child · structure": dict(chunks=None, retriever=None),
    }
    pc = ParentChildRetriever(bench.documents, StructureChunker(soft=1000, hard=1500), embedder)
    runs["parent-child · structure"] = dict(chunks=list(pc.store.parents.values()), retriever=pc)
    for label, kw in runs.items():
        out = run_experiment(bench, embedder=embedder, k=K, label=label, **kw)
        out.record(rec, experiment="combinations", embedder=embedder.name, k=K)
        combo_outcomes[(name, label)] = out
        combo_rows.append(out.row(metrics, strict=True))
combos = pd.DataFrame(combo_rows)
print(f"{len(combos)} runs measured; the table follows the case below")

# %% [markdown]
# ## One question, with and without the structural preamble
# A structural preamble puts a document's title and opening lines in front of every chunk of
# that document before it is embedded. That changes every chunk's vector, and so every score:
# a chunk whose own words matched the question can be diluted by the opening's words, and a
# chunk whose opening shares the question's words can gain. Which way a ranking moves
# depends on how each chunk's score changes against the others'.
#
# The case below is the course question whose recall drops the most when the preamble is
# added to the breadcrumbed chunks (ties: the one whose gold-holding chunk falls furthest).
# First the gold; then, for the top hits with the preamble and for the chunk holding the
# gold, the rank and score without and with it, and how many MiniLM tokens each is embedded
# with (past the encoder's input limit the rest is cut); then the first hit and the chunk
# holding the gold as embedded (`[prefix]` is the breadcrumb, the line under it the
# preamble).

# %%
from ragkit.report import (first_holding_rank, hits_text, largest_loss, score_shift,
                           text_frame)

with_pre = combo_outcomes[("course", "+ structural preamble")]
without = combo_outcomes[("course", "structure + breadcrumbs")]
course_questions = {x.id: x for x in load("course").for_profile().queries}
before, after = without.values("recall", 1024), with_pre.values("recall", 1024)
qid = largest_loss(before, after, course_questions, without.hits, with_pre.hits)
if qid is None:
    display(Markdown("No question loses recall with the preamble here."))
else:
    q = course_questions[qid]
    loss = (after - before).dropna()
    display(Markdown(
        f"**{q.id}: {q.text}** — recall at `1024` tokens: breadcrumbs {before[qid]:.0%}, "
        f"+ structural preamble {after[qid]:.0%}; the gold-holding chunk ranks "
        f"{first_holding_rank(q, without.hits[qid])} without the preamble and "
        f"{first_holding_rank(q, with_pre.hits[qid])} with it. Over all {len(loss)} "
        f"questions, {int((loss < 0).sum())} lose recall with the preamble and "
        f"{int((loss > 0).sum())} gain."))
    texts = {d.id: d.text for d in load("course").for_profile().documents}
    print("=== the gold:", " | ".join(f"{texts[g.doc_id][g.start:g.end]} ({g.doc_id})"
                                      for g in q.gold))
    shift = score_shift(q, without.hits[qid], with_pre.hits[qid], k=3,
                        tokens=lambda c: embedder.count_tokens([c.embedding_text()])[0])
    display(text_frame(shift, {"score before": "{:.3f}", "score after": "{:.3f}",
                               "score change": "{:+.3f}"}))
    gold_row = shift[shift["holds gold"] == "yes"]
    others = shift[shift["holds gold"] != "yes"].dropna(subset=["score change"])
    if len(gold_row) and len(others):
        g = gold_row.iloc[0]
        cut = g["tokens embedded after"] > embedder.max_tokens
        display(Markdown(
            f"With the preamble, the gold chunk's score changes by {g['score change']:+.3f} "
            f"and the chunks now above it by {others['score change'].min():+.3f} to "
            f"{others['score change'].max():+.3f}: "
            + ("it loses more than they do, so it falls. " if g["score change"] <
               others["score change"].min() else "it does not lose more than all of them. ")
            + f"It is embedded with {g['tokens embedded after']} MiniLM tokens, "
            + (f"more than the encoder's {embedder.max_tokens}, so the end of the chunk is cut "
               "before the encoder reads it: part of the fall is truncation, not dilution."
               if cut else f"within the encoder's {embedder.max_tokens}: nothing of it is cut, "
               "so its fall is the preamble's words diluting its own, not truncation.")))
    print("=== + structural preamble, the first hit as embedded:\n"
          + hits_text(q, with_pre.hits[qid], k=1, lines=5))
    at = first_holding_rank(q, with_pre.hits[qid])
    if at and at > 1:
        print("=== + structural preamble, the chunk holding the gold as embedded:\n"
              + hits_text(q, [with_pre.hits[qid][at - 1]], k=1, lines=5)
              .replace("── #1 ", f"── #{at} ", 1))

# %% [markdown]
# ## The combinations, measured
# Every combination on the three benchmarks: span recall and pass at a budget of `1024`
# tokens, IoU, span recall and pass at `k = 5`, nDCG@10, and the flags (chunk texts cut at
# MiniLM's input limit, documents late chunking read in several windows).

# %%
percent_frame(combos, shares=metrics)  # recall: span recall at k = 5, headed recall@k

# %% [markdown]
# Each step against the row it builds on (the side branches against plain structure), paired
# over the same questions (all of the course's questions, not only the held-out half the boards
# below read) at `1024` tokens:

# %%
from ragkit.experiments import flag_count
from ragkit.report import ci, step_display, step_table

steps = step_table(combo_outcomes, budget=1024)
display(step_display(steps, name="recall@B1024 difference, points [95 % CI]"))



pre = steps[steps.step == "+ structural preamble"]
preamble_confound = (
    "Notebook 04 read the structural preamble on recursive chunks with no breadcrumb, on "
    "pass@20. Here two things differ, and this notebook does not separate them: the "
    "breadcrumb already names the headings, and the longer prefix pushes more chunk texts "
    "past MiniLM's input limit (" + "; ".join(
        f"{r.benchmark}: {flag_count(combo_outcomes[(r.benchmark, r.against)].flags):,} "
        f"truncated without it, {flag_count(combo_outcomes[(r.benchmark, r.step)].flags):,} "
        f"with it, recall {100 * r.diff:+.1f} {ci(r.low, r.high)}"
        for r in pre.itertuples()) + ").")
print(preamble_confound)
cut_counts = ", ".join(
    f"{r.benchmark} {flag_count(combo_outcomes[(r.benchmark, r.against)].flags):,} to "
    f"{flag_count(combo_outcomes[(r.benchmark, r.step)].flags):,}" for r in pre.itertuples())

# %% [markdown]
# ## The retrieval stack, one change at a time
# ragkit's stack is dense search fused with BM25 over *identifier words*, with long chunks
# read as windows. First the mechanism, on one question of Anthropic's code set: the query
# terms that keyword search matches in the gold chunk when words are split as prose, and when
# `snake_case` and `camelCase` identifiers are also split into their words
# (`ragkit.retrieve.matched_terms`).

# %%
from ragkit.retrieve import matched_terms

code = load("anthropic")
chunk_of = {(c.doc_id, c.start, c.end): c for c in code.chunks}
for q in code.queries:
    gold = chunk_of[(q.gold[0].doc_id, q.gold[0].start, q.gold[0].end)]
    plain, ident = (matched_terms(q.text, gold.text, t) for t in ("words", "identifiers"))
    if len(ident) > len(plain) + 1:
        break
print(q.text)
print("matched as plain words:     ", plain)
print("matched as identifier words:", ident)

# %% [markdown]
# Now the whole stack on one question, step by step, on the router's chunks of Anthropic's set:
# the first question whose gold dense search leaves outside its top `k = 5` and the stack
# ranks first. Each row is one step alone; `*` marks a hit that holds gold.

# %%
from ragkit.chunkers import Router
from ragkit.report import (fusion_table, pick, ranked_within, stack_parts,
                           walkthrough_text)
from ragkit.report.stack_lesson import ranks

code_part = code.for_profile()
parts = stack_parts(Router().chunk_all(code_part.documents, progress=False), embedder)
part_names = list(parts)
asked = [x for x in code_part.queries if x.gold]
case = pick(asked, ranks(asked, parts[part_names[0]]), ranks(asked, parts[part_names[-1]]))
if case is None:
    display(Markdown("No question in this slice has its gold outside dense search's top 5 and "
                     "first in the stack (the smoke profile's slice is small)."))
else:
    print(f"{case.id}: {case.text}")
    print(walkthrough_text(case, parts))
    print("The stack's first hit, as text (the gold between ⟦ ⟧):")
    print(hits_text(case, parts[part_names[-1]].search([case.text], 1)[0], k=1, lines=6))

# %% [markdown]
# The stack's last step is arithmetic. Dense search over windows and BM25 over identifier words
# each rank their candidates; every chunk gets `0.5 / rank` from each list it is in (the
# stack's equal weights: reciprocal-rank fusion with `constant = 0`), and the sums are ranked.
# Below, every chunk in either list's top `k = 5`, with its rank in each whole list: the sums
# are the stack's own scores.

# %%
if case is not None:
    stack = parts[part_names[-1]]
    fusion = fusion_table(case, stack.dense.search([case.text], stack.candidates)[0],
                          stack.bm25.search([case.text], stack.candidates)[0],
                          ("dense, windows", "BM25, identifiers"), stack.weights,
                          stack.constant)
    display(fusion)
    g = fusion[fusion["holds gold"] == "yes"].iloc[0]
    display(Markdown(
        f"The gold chunk is {g['rank, dense, windows']} in dense search and "
        f"{g['rank, BM25, identifiers']} in BM25: "
        f"{g['sum']:.4f} in all, rank {g['fused rank']} after fusion. A chunk ranked high by "
        "one list and absent from the other gets only half the weight."))

# %% [markdown]
# Finally the cross-encoder, which reads the question and each of the stack's first hits
# together and reorders them by its own score (`candidates = 20`; source code keeps the stack's
# order, and the course corpus is prose, so it applies). On the first course question whose
# gold the stack ranks below first but inside its top `k = 5`:

# %%
course_part = load("course").for_profile()
course_parts = stack_parts(Router().chunk_all(course_part.documents, progress=False), embedder,
                           rerank="packaged")
names = list(course_parts)
asked = [x for x in course_part.queries if x.gold]
q_rr = ranked_within(asked, ranks(asked, course_parts[names[-2]]), 2, 5)
if q_rr is None:
    display(Markdown("No course question here has its gold second to fifth in the stack."))
else:
    print(f"{q_rr.id}: {q_rr.text}")
    print(walkthrough_text(q_rr, {n: course_parts[n] for n in names[-2:]}))
    course_texts = course_part.docs_by_id()
    print("=== the gold:", " | ".join(course_texts[g.doc_id].text[g.start:g.end]
                                      for g in q_rr.gold))
    reranked = course_parts[names[-1]].search([q_rr.text], 5)[0]
    print("=== the reranked list's first hit, then its hit holding the gold (⟦ ⟧):")
    gold_at = ranks([q_rr], course_parts[names[-1]])[q_rr.id]
    print(hits_text(q_rr, reranked[:1], k=1, lines=4))
    if gold_at and gold_at > 1:
        print(hits_text(q_rr, [reranked[gold_at - 1]], k=1, lines=4)
              .replace("── #1 ", f"── #{gold_at} ", 1))
    before_at = ranks([q_rr], course_parts[names[-2]])[q_rr.id]
    display(Markdown(
        f"On this question the cross-encoder moves the gold from rank {before_at} to "
        f"{gold_at}: " + ("a small move, inside the top five either way. " if before_at
                          and gold_at and abs(before_at - gold_at) <= 1 else "")
        + "One question shows the mechanism, not its worth; the step table below measures "
        "the cross-encoder over the held-out questions."))

# %% [markdown]
# Then the lesson, measured: on the router's chunks, each step against the step before it,
# all else fixed — BM25 over plain words added to dense search, identifier words instead of
# plain ones, windows so that no chunk is cut at the encoder's input limit (this is the full
# stack), and a cross-encoder over the stack's first hits. Points of span recall at `1024`
# tokens on the held-out half of each benchmark's questions, with paired 95 % intervals
# (`ragkit.experiments.design.stack_steps`, runs of `ragkit bench design`).

# %%
from ragkit.experiments.design import STACK_STEPS, saved_runs, stack_steps
from ragkit.report import diff_ci

lesson_steps = stack_steps(saved_runs())
what = dict(STACK_STEPS) | {"stack+cross-encoder": "+ cross-encoder over the top 20"}
lesson = pd.DataFrame([{
    "step": what[e.treated.label.split("+", 1)[1] if e.factor == "reranker"
                 else e.treated.first_stage],
    "benchmark": e.benchmark,
    "recall@B diff [95 % CI]": diff_ci(e.recall),
    "n": e.recall.n} for e in lesson_steps if e.budget == BUDGET])
if lesson.empty:
    display(Markdown("No stack-lesson runs in these results: run `ragkit bench design "
                     "--steps` (the smoke profile has none)."))
else:
    display(lesson.pivot(index="step", columns="benchmark",
                         values="recall@B diff [95 % CI]").reindex(
        [w for w in what.values() if w in set(lesson.step)]).fillna("not run"))
    if lesson.pivot(index="step", columns="benchmark", values="n").isna().any().any():
        display(Markdown("*not run*: a step `ragkit bench design` did not measure there. The "
                         "stack's cross-encoder keeps source code in the first stage's order "
                         "(`ragkit.retrieve.is_code`), so on Anthropic's code set it has no "
                         "step to measure."))
    hurts = [f"{what[e.treated.first_stage] if e.factor != 'reranker' else 'the cross-encoder'}"
             f" on {e.benchmark} ({diff_ci(e.recall)})"
             for e in lesson_steps if e.budget == BUDGET and e.recall.high < 0]
    display(Markdown("Steps whose interval lies below zero at this budget: "
                     + ("; ".join(hurts) if hurts else "none") + "."))

# %% [markdown]
# ## The leaderboard, at an equal context budget
# The configurations the course measured, ranked by span recall when **`1024` cl100k tokens**
# of retrieved text reach the model. A configuration measured by two notebooks with the same
# per-question scores is one row naming both; runs that share a name but scored differently
# (the same strategy inside two scripts with different settings) are separate rows, told
# apart by the "measured in" column. Each board shows its leading rows; its heading says how
# many of how many. Each value is a mean over the **held-out half** of the benchmark's
# questions (no setting was chosen on them; *(tuned)* marks rows whose settings were chosen
# on the other half; the stack's design came after all-question results were read, see
# docs/method.md) with its 95 % bootstrap interval; `n` is the number of questions
# scored; *(gold units as chunks)* marks rows that retrieve Anthropic's own chunks, which are
# also its gold units, so a hit there is a whole gold unit by construction (close to an
# oracle: no chunker you could run on your own files starts from them). Rows may differ in
# several factors at once, so the order is not the effect of any
# one of them (the decision guide below is); recall@5 (a fixed number of hits,
# whatever their size) is kept as a secondary column. (Run `make reproduce` first; in the
# smoke profile this reads the smoke results.)

# %%
rec.save()  # so the combinations are part of what we read
from ragkit.report import (leaderboard as lb, load_results, load_scores, percent_frame,
                           save_table)

rows, scores = load_results(), load_scores()
boards = {b: lb.board(rows, scores, b, BUDGET, split="held-out") for b in lb.MAIN_BENCHMARKS
          if (rows.benchmark == b).any()}
SHOWN = 8  # each board's leading rows; every row goes to a file
for name, b in boards.items():
    saved = save_table(lb.markdown(b, max_rows=len(b)), f"07_board_{name}",
                       title=f"{name}: every configuration at {BUDGET:,} tokens, held-out half")
    display(Markdown(f"### {name} (the first {min(SHOWN, len(b))} of {len(b)} rows; all of "
                     f"them: `{saved}`)\n\n" + lb.markdown(b, max_rows=SHOWN)))

# %% [markdown]
# The same boards as a ranked chart: the leading configurations, best on top, each a dot at
# its mean with its 95 % interval; the best simple baselines in orange, drawn even when they
# rank below the cut, with a dotted line at the best of MiniLM's (a baseline under the second
# encoder is named so).
# Overlapping whiskers do not settle a comparison: the paired comparisons of the decision guide
# at the end of this notebook do.

# %%
from ragkit.report import ranked_intervals, show_figure

for name, b in boards.items():
    shown = b.assign(strategy=[(s if e == "all-MiniLM-L6-v2" or f"({e})" in s
                                else f"{s} · {e}")
                               + (" (tuned)" if t else "")
                               + (" (gold units as chunks)" if lb.is_gold_units(s) else "")
                               for s, e, t in zip(b.strategy, b.embedder, b.tuned)])
    others = set(b.embedder) - {"all-MiniLM-L6-v2"}

    def minilm_baseline(s: str) -> bool:  # the dotted line: MiniLM's best baseline
        return lb.is_baseline(s) and not any(f"({e})" in s or f"· {e}" in s for e in others)

    show_figure(ranked_intervals(shown, top=12, highlight=lb.is_baseline, line=minilm_baseline,
                                 line_label="best MiniLM simple baseline shown",
                                 title=f"{name}: span recall at {BUDGET:,} tokens",
                                 xlabel=f"span recall@B{BUDGET} (%), held-out mean and 95 % "
                                        "interval"),
                f"07_board_{name}")

# %% [markdown]
# ## Recall against budget
# The three leading configurations that were measured at three or more budgets of
# `ragkit.evaluate.BUDGETS`, and the best simple baseline, against budget (the shaded band is
# the 95 % interval). A configuration scored at one budget only (a tuning script's pick) is a
# point, not a line, so it is left out; the sentence under each chart names what was left
# out. Where two lines cross, which strategy has more recall depends on how much context you
# can afford. These curves average over **all** questions of each benchmark, so at the board's
# budget they do not match the boards above, which average over the held-out half only.

# %%
for name, b in boards.items():
    top, skipped = lb.curve_runs(b, scores, top=3)
    fig = lb.plot_curves(lb.curves(rows, scores, name, runs=top),
                         f"{name}: recall vs budget (all questions)")
    show_figure(fig, f"07_budget_{name}")
    display(Markdown(f"**{name}**: " + ("ranked above these lines but measured at fewer "
                                       "budgets, so not drawn: " + "; ".join(skipped) + "."
                                       if skipped else "the three leading configurations of "
                                       "the board are all drawn.")))

# %% [markdown]
# ## By question type (course corpus)
# Span recall at `1024` tokens for the leading configurations, per question type (`n` in each
# column header). A type holds few questions, so these are descriptions without intervals:
# read them for where a configuration fails, not to rank configurations.

# %%
types = lb.by_type(rows, scores, "course", BUDGET)
percent_frame(types)

# %% [markdown]
# ## Claim check
# Each quantitative claim the course quotes, decided by the rule declared for it in
# `ragkit.report.claims` before any number was read: the claim's own metric, one configuration and
# one baseline, a paired 95 % interval, and a tolerance of a tenth of the claimed value
# (`tolerance = 0.1`). Other generators and the controls appear as sensitivity rows, without a
# verdict. "Not measurable here" always says why: the table below keeps each claim's verdict,
# and each such claim's reason is printed under it (and kept in the saved table it names).

# %%
from ragkit.report import check_claims, claim_sentences, show

claims = check_claims(load_results(), load_scores())
if settings.smoke:
    display(Markdown("*Smoke profile: these rows come from small slices, so the verdicts on "
                     "published numbers are not meaningful here; run `make reproduce`.*"))
for r in claims[claims.role == "claim"].itertuples():
    rec.add(experiment="claims", benchmark="-", strategy=r.id, metric="claim_estimate",
            value=r.estimate, n_queries=r.n,
            params={"source": r.source, "claim": r.claim, "verdict": r.verdict,
                    "low": r.low, "high": r.high, "reason": r.reason})
from ragkit.report import save_table

saved = save_table(show(claims), "07_claims", title="Every claim with its sensitivity rows")
display(Markdown(f"The claims and their verdicts; the sensitivity rows (other generators, "
                 f"controls) are in `{saved}`."))
display(show(claims[claims.role == "claim"], brief=True))
display(Markdown("\n".join(f"- {s}" for s in claim_sentences(claims)  # each with its reason
                           if "not measurable here" in s)))

# %% [markdown]
# ## ragas, offline
# ragas' ID-based context precision and recall need no LLM: they compare retrieved ids with
# reference ids. On Anthropic's own chunks (ids = upstream chunks) they must agree exactly with
# ragkit's precision@k and pass@k scored against the anchored gold alone. ragkit's own rule
# also credits a retrieved chunk whose text is word for word a gold chunk's (Anthropic's files
# repeat licence headers; see docs/glossary.md): the last column, and the only difference. The
# LLM-judged metrics (faithfulness, answer relevancy) run only when an API key is configured;
# otherwise they are skipped and recorded as such.

# %%
from ragas import SingleTurnSample
from ragas.metrics import IDBasedContextPrecision, IDBasedContextRecall

anthropic = load("anthropic").for_profile()
out = run_experiment(anthropic, embedder=embedder, k=K, chunks=anthropic.chunks, label="upstream")
gold_ids = {(c.doc_id, c.start, c.end): c.id for c in anthropic.chunks}
p_ragas, r_ragas = [], []
for q in anthropic.queries:
    sample = SingleTurnSample(retrieved_context_ids=[c.id for c in out.retrieved(q.id)[:K]],
                              reference_context_ids=[gold_ids[(g.doc_id, g.start, g.end)]
                                                     for g in q.gold])
    p_ragas.append(IDBasedContextPrecision().single_turn_score(sample))
    r_ragas.append(IDBasedContextRecall().single_turn_score(sample))
from dataclasses import replace

from ragkit.evaluate.metrics import query_scores

anchored = pd.DataFrame([query_scores(replace(q, copies=()), out.retrieved(q.id), K,
                                      texts=out.texts) for q in anthropic.queries])
ragas_table = pd.DataFrame({
    "metric": ["context precision (ids)", "context recall (ids)"],
    "ragas": [sum(p_ragas) / len(p_ragas), sum(r_ragas) / len(r_ragas)],
    "ragkit, anchored gold": [anchored["precision@k"].mean(), anchored["pass@k"].mean()],
    "ragkit, identical text credited": [out.means["precision@k"], out.means["pass@k"]]})
assert (ragas_table["ragas"] - ragas_table["ragkit, anchored gold"]).abs().max() < 1e-9, \
    "ragas' ID metrics and ragkit's anchored-gold metrics disagree"
for r in ragas_table.itertuples():
    rec.add(experiment="ragas", benchmark="anthropic", strategy="upstream", metric=r.metric,
            value=r.ragas, embedder=embedder.name, k=K, n_queries=len(anthropic.queries))
percent_frame(ragas_table, shares=["ragas", "ragkit, anchored gold",
                                   "ragkit, identical text credited"])

# %% [markdown]
# ## Answers, not only retrieval: two experiments that need a stronger model
# Everything above scores the retrieved text, not an answer written from it. Two experiments
# would score answers: a judge's faithfulness scores, and the position of the evidence in the
# prompt. Each needs a model this machine does not have (an API judge; a local model that can
# answer from the gold passage alone), so each cell below checks for it first and, without
# it, records a skipped row with the reason instead of a number. The course's verdicts do not
# rest on either.
#
# ### Judged by an LLM: faithfulness and answer relevancy
# Seed 002's second claim: answers from small-to-big contexts are more faithful (≈ 0.91) than
# from big chunks (≈ 0.79). The local SmolLM2 answers the same course questions from each
# retriever's top passages (`k = 3`); ragas' judge (OpenAI, `OPENAI_API_KEY`) scores the answers. Without a key
# the rows are recorded as skipped, with the reason.

# %%
from ragkit.evaluate import judge_unavailable, judged_rows
from ragkit.evaluate.judge import METRICS as JUDGED

skip = judge_unavailable()
if skip is None:
    from ragkit.evaluate import LocalAnswerer
    from ragkit.retrieve import DenseRetriever, ParentChildRetriever

    course = load("course").for_profile()
    pc = ParentChildRetriever(course.documents, StructureChunker(soft=1000, hard=1500), embedder,
                              child_tokens=160, child_k=20)
    judged = judged_rows(course, {"small-to-big": pc, "big (parents)": DenseRetriever(
        list(pc.store.parents.values()), embedder)}, LocalAnswerer(max_tokens=96),
        n_questions=6 if settings.smoke else 24)
    for r in judged.itertuples():
        rec.add(experiment="ragas_judged", benchmark="course", strategy=r.strategy,
                metric=r.metric, value=r.value, embedder=embedder.name, k=3, n_queries=r.n,
                flags=[f"unscored:{r.unscored}"] * bool(r.unscored)
                + [f"passages_cut:{r.passages_cut}"] * bool(r.passages_cut))
    display(judged)
else:
    for m in JUDGED:
        rec.add(experiment="ragas_judged", benchmark="course", strategy="-", metric=m,
                value=None, flags=[skip])
    display(Markdown(f"Faithfulness and answer relevancy: **{skip}**."))

# %% [markdown]
# ### Lost in the middle
# Liu et al. (2023) reports that a model answers worse when the gold passage sits in the middle
# of many distractors than at either end. Measuring that here needs a local model that answers
# well from the gold passage alone, or there is nothing for the position to take away:
# `ragkit bench answer-floor` measures every local model on the course's staged questions, and
# the experiment runs only with a model that clears the floor. The sentence below is read from
# the bench's rows.

# %%
from ragkit.report import answer_floor_choice

lost_line = answer_floor_choice().line("the lost-in-the-middle experiment")
display(Markdown(lost_line))

# %% [markdown]
# ## The decision guide
# The boards above rank everything together, so a row near the top may differ from the one
# below it in the chunker, the retrieval *and* the reranker at once. The decision guide does
# not: `ragkit.experiments.design` pairs runs of `ragkit bench design` that differ in **one** factor and
# answers three questions apart: which chunker under your retrieval (against the best of the
# seven simple baselines measured under that same retrieval), which retrieval on your chunks,
# and which encoder. The best baseline is chosen on the tune half of the questions and every
# difference is quoted on the held-out half, which shares no gold unit and no gold text with
# it. `ragkit.report.guide` writes the same text to `results/decision_guide.md`; the section
# "One factor at a time" of `docs/results.md` shows the same cells.

# %%
from ragkit.experiments.design import effects, saved_runs
from ragkit.experiments.design_costs import load_costs, load_encoder_costs
from ragkit.report import guide, shown_path

runs = saved_runs()
found = effects(runs)
costs = load_costs(rows)
guide_text = guide.markdown(found, costs)
guide_file = shown_path(guide.write(guide_text))  # every budget, every configuration's cost
headline = [e for e in found if e.budget == BUDGET]
shown_here = [e for e in headline if e.benchmark != "financebench"]  # its cells: notebook 10
display(Markdown(f"At the headline budget of {BUDGET:,} tokens (every budget, and the costs: "
                 f"`{guide_file}`; FinanceBench's PDFs: notebook 10):\n\n"
                 + guide.sections(shown_here, level=3, which=(1,))))
display(Markdown("Every cell the closing's opening answer counts, at every budget and on every "
                 "benchmark, FinanceBench included: ragkit's chunker minus the tune half's pick, "
                 "recall@B in points on the held-out half, marked where the interval excludes 0. "
                 "A *weak pick* is a tune-half pick that the held-out half ranks below another "
                 "baseline scoring at least what ragkit's chunker does there: a win against it "
                 "is marked so, and the closing's calls do not count it as a win."))
display(guide.chunker_grid(found))

# %% [markdown]
# The second question holds the chunks fixed and changes the retrieval: the stack against
# dense search, and the cross-encoder on top of the stack.

# %%
display(Markdown(guide.sections(shown_here, level=3, which=(2,))))

# %% [markdown]
# The third holds chunks and retrieval fixed and changes the encoder, under each first stage.
# The second encoder, EmbeddingGemma, reads far longer texts than MiniLM (its limit is in
# `docs/models.md`); it ran with every
# chunker on the course benchmark and with the router's chunks alone on the others. The
# `minilm` inside a chunker's name is the tokenizer that sizes its chunks, not the encoder.

# %%
display(Markdown(guide.sections(shown_here, level=3, which=(3,))))

# %% [markdown]
# What the configurations in those tables cost, as `ragkit bench design --costs` measured them:
# chunking CPU seconds over the whole benchmark, the dense index (float32 vectors, windows
# included), and single-question latency (the top hits of one question at a time, after one
# warm-up query, on this machine).

# %%
display(Markdown(guide.costs_table(costs, headline)
                 + f"\n\n{len(guide.costs_compared(costs, headline))} of {len(costs)} measured "
                 f"(benchmark, configuration) pairs; all of them: `{guide_file}`."))

# %%
enc_costs = load_encoder_costs(rows)  # `ragkit bench design --costs --second-encoder`
if enc_costs:
    display(Markdown(
        "What each encoder costs on the router's chunks (milliseconds a chunk over a fixed "
        "sample of the chunks, one question's encoding p50, the float32 index for every chunk; "
        "one CPU process):\n\n| benchmark | encoder | ms a chunk | question p50 ms | index MiB |"
        "\n|---|---|---|---|---|\n" + "\n".join(
            f"| {c['benchmark']} | {c['encoder']} | {c['chunk_encode_ms']:,.0f} | "
            f"{c['query_encode_p50_ms']:,.0f} | {c['index_mb']:.1f} |" for c in enc_costs)))

# %% [markdown]
# ## Exercises
# Each runs as written on the runs already loaded; change the value and run it again.
#
# 1. **Tuned and read on the same questions.** Choose the best baseline and read the
#    difference on *all* questions (`split="all"`) instead of held-out ones. Which cells
#    change their pick?

# %%
header, cells = guide.chunker_rows(effects(runs, split="all"))
every_q = pd.DataFrame(cells, columns=header)
every_q.rename(columns=lambda c: c.replace("tune half", "all questions")
               .replace("held-out half", "same questions"))

# %% tags=["answers"] jupyter={"source_hidden": true, "outputs_hidden": true}
# Answer to exercise 1 (expand to read): the cells whose pick differs between the held-out
# reading and the all-questions one. Exercises 2 and 3 answer themselves.
changed, n_cells = guide.pick_changes(effects(runs), effects(runs, split="all"))
print(f"{len(changed)} of {n_cells} cells change their pick; in {int(changed.turned.sum())} the "
      "verdict itself changes (ragkit ahead / no difference / baseline ahead), in the other "
      f"{int((~changed.turned).sum())} only the baseline named (benchmark, retrieval, budget, "
      "encoder: held-out pick -> all-questions pick)")
for bench, retrieval, budget, enc, held, every in changed.drop(columns="turned").itertuples(
        index=False):
    print(f"  {bench}, {retrieval}, {budget:,}, {enc}: {held} -> {every}")

# %% [markdown]
# 2. **A best-of-a-few baseline.** Keep only the fixed-size and recursive splitters as
#    baselines, as a script that picks its own baseline might. The design refuses the
#    comparison: every chunker row's pick reads "undecided (baselines missing)".

# %%
few = [r for r in runs if not r.config.simple
       or r.config.chunker.startswith(("fixed", "recursive"))]
header, cells = guide.chunker_rows(effects(few))
few_rows = pd.DataFrame(cells, columns=header)
print(f"{(few_rows.pick == 'undecided (baselines missing)').sum()} of {len(few_rows)} chunker "
      "rows read 'undecided (baselines missing)'; the first six:")
few_rows[["benchmark", "retrieval", "budget", "encoder", "pick"]].head(6)

# %% [markdown]
# 3. **Another metric for the combinations.** Re-run the step table on IoU (`metric="iou"`,
#    the gold's share of the union of returned and gold text). Returning more text can raise
#    span recall while it dilutes the context: does any step move the two metrics in opposite
#    directions?

# %%
step_display(step_table(combo_outcomes, budget=1024, metric="iou"),
             name="IoU@B1024 difference, points [95 % CI]")

# %% tags=["answers"] jupyter={"source_hidden": true, "outputs_hidden": true}
# Answer to exercise 3 (expand to read): each step's recall and IoU intervals side by side.
from ragkit.report import metric_agreement

print(metric_agreement(step_table(combo_outcomes, budget=1024),
                               step_table(combo_outcomes, budget=1024, metric="iou"),
                               "span recall", "IoU"))

# %%
print(rec.save())

# %%
from ragkit.report import (claims_finding, effect_decisions, guide_findings,
                           ranked_closing, rerank_findings, rerank_pairs, step_findings)

from ragkit.report.decisions import ranked

closing_calls = [  # the stack was designed after all-question results were read (see above)
    d.with_note("the stack's design came after all-question results were read, so its "
                "held-out half is not untouched (docs/method.md)")
    if "stack" in d.technique.split(" on ")[0] else d
    for d in effect_decisions(found, BUDGET, costs, load_encoder_costs(rows))]
if closing_calls:
    top = ranked(closing_calls)[0]
    top_bench, top_c = top.decisive
    display(Markdown(
        "**The opening question, answered:** " + guide_findings(found, BUDGET)[0]
        + f" The largest effect in the closing is not a chunker's: {top.technique}, "
        f"{top.metric} {100 * top_c.diff:+.1f} {ci(top_c.low, top_c.high)} on {top_bench} "
        "(its first line)." if "chunker" not in top.technique else
        "**The opening question, answered:** " + guide_findings(found, BUDGET)[0]))
display(Markdown(ranked_closing(
    closing_calls, most=len(closing_calls), none="no complete `ragkit bench design` effect in "
    "these results (the smoke profile has none)", findings=
    guide_findings(found, BUDGET)
    + [f[:-1] + ("; the preamble also raises the chunk texts cut at MiniLM's input limit ("
                 + cut_counts + "), so its words and truncation are not separated here."
                 if f.startswith("**+ structural preamble**") else f[-1])
       for f in step_findings(steps)]
    + [claims_finding(claims)]
    + rerank_findings(rerank_pairs(rows, scores))
    + [lost_line])))
