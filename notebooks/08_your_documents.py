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
# # 08 · Your documents: the whole comparison on a corpus of your own
#
# Terms: every metric, word and seed essay, defined once: [glossary](../docs/glossary.md).
#
# Seed 001's advice is to "Build a small golden set" of real questions and "measure recall@k
# on retrieval alone, before any generation"; seed 002 says the same ("Build the golden set
# first"). The notebooks so far measured the course's corpora. **The question here is yours:
# on your documents, which chunking strategy brings back your evidence, and is the difference
# larger than chance?** Point this notebook at a folder (Markdown, plain text, HTML, PDF or
# source code; metadata from front matter or a `metadata.csv` sidecar; notebook 10 shows how a
# PDF is read) and a questions file whose
# evidence is written as verbatim quotes:
#
# ```json
# {"id": "q1", "question": "Who approves a refund above the limit?",
#  "evidence": [{"doc_id": "refund-policy", "quote": "the finance lead approves"}]}
# ```
#
# ragkit finds each quote in the documents (exactly, then ignoring whitespace) and scores every
# strategy against those spans. A quote that is missing or appears twice is reported with its
# line — never guessed. Set `RAGKIT_BYOD_CORPUS` and `RAGKIT_BYOD_GOLDEN` to your own paths;
# by default the notebook runs on the course corpus and its quote-based questions. The same
# comparison runs from a shell with `ragkit eval --corpus DIR --golden FILE`.

# %%
from IPython.display import Markdown, display

import pandas as pd

from ragkit.config import get_settings, seed_everything
from ragkit.report import quiet_cells

quiet_cells()  # each cell's warnings as one line per kind
seed_everything()
settings = get_settings()
CORPUS, GOLDEN = str(settings.byod_corpus), str(settings.byod_golden)
STRATEGIES = settings.byod_strategies
K = 5
print(CORPUS, GOLDEN, STRATEGIES, sep="\n")

# %% [markdown]
# The strategies, by the names the tables use. `baselines` stands for the course's seven simple
# baselines: fixed windows (`fixed_chars(size/overlap)` in characters, `fixed_tokens(size/overlap,
# tokenizer)` in that tokenizer's tokens), `recursive(size/overlap,chars)` and the two library
# splitters (langchain's and chonkie's, cut to `254` MiniLM tokens). **structure** packs the
# Markdown blocks of one section into chunks: its label `structure(soft/hard,tokenizer,breadcrumb)`
# reads "close a chunk past `soft` tokens, never exceed `hard`, counted in MiniLM's tokenizer,
# each chunk prefixed with its heading path". **router** gives each document the chunker made for
# its class (policy, contract, chat, code, API reference, …: `ragkit.chunkers.router`).

# %% [markdown]
# ## Load the folder and anchor the questions

# %%
from ragkit.evaluate import load_folder

bench, file_errors, question_problems = load_folder(CORPUS, GOLDEN, name="your corpus")
answerable = [q for q in bench.queries if q.gold]
no_evidence = pd.Series([q.type for q in bench.queries if not q.gold]).value_counts()
display(Markdown(
    f"{len(bench.documents)} documents read, {len(file_errors)} skipped; "
    f"{len(bench.queries)} questions anchored ({len(answerable)} with evidence), "
    f"{len(question_problems)} skipped. The {len(bench.queries) - len(answerable)} without "
    "evidence are of type " + ", ".join(f"*{t}* ({n})" for t, n in no_evidence.items())
    + ": questions the documents do not answer, which a system should refuse; they test "
    "generation and have no gold text to retrieve, so no strategy is scored on them."))
for line in file_errors + question_problems:
    print(line)

# %%
if settings.smoke:  # a quick slice for CI: the first ten documents and their questions
    bench = bench.restrict([d.id for d in bench.documents[:10]], 40)
    print(f"smoke profile: {len(bench.documents)} documents, {len(bench.queries)} questions")

# %% [markdown]
# ## Score every strategy
# Every strategy chunks the corpus, is embedded and searched, and is scored on all the questions
# with evidence. The scores, under the glossary's names: **recall@B1024**, the share of the gold characters
# inside the context packed to `B = 1024` cl100k tokens (hits in rank order, text already in
# it counted once); **pass@B1024**, the share of the gold units wholly inside it;
# **iou@B1024**, gold ∩ context over gold ∪ context. Then the top `k = 5` chunks, whatever
# their size: **span recall@5** (the glossary's recall@k at `k = 5`: the share of the gold
# characters inside the top five), **precision** and **iou** there,
# **precision_omega** (the best precision the chunking allows), **pass@k**, **mrr@k** (one
# over the rank of the first chunk that touches the gold) and **ndcg@10**; `n_chunks` is the
# number of chunks the strategy cut, and a `truncated:N` flag counts the chunks longer than the
# encoder's input, which dense search embeds only in part. Every table, figure and sentence
# below uses these two names: span recall@5 for the top five, recall@B1024 at the budget.

# %%
from ragkit.chunkers import get_chunker, get_chunkers, simple_baselines
from ragkit.embed import Embedder
from ragkit.experiments import compare
from ragkit.report import Recorder, percent_frame

rec = Recorder("08_your_documents")
B = 1024  # the context budget strategies are ranked at (cl100k tokens reaching the model)
embedder = Embedder()
chunkers = get_chunkers(STRATEGIES)  # "baselines": every simple baseline the course measures
table, outcomes = compare([bench], chunkers, embedder, rec, k=K, experiment="byod",
                          return_outcomes=True)
table = (table.sort_values([f"recall@B{B}", "recall"], ascending=False).reset_index(drop=True)
         .rename(columns={"recall": f"span recall@{K}"}))
print(f"{len(table)} strategies scored on {len(answerable)} questions")

# %% [markdown]
# ## One question, two strategies
# Before the tables, the mechanism on one question: the one on which the strategy ranked first
# on all questions (by recall@B1024; the leaderboard follows) and the one ranked
# last differ most. Every gold unit of the question is shown, highlighted inside the chunks each
# strategy cut around it, then the top two hits each strategy returns (gold between ⟦ ⟧).

# %%
from ragkit.evaluate.budget import pack_context
from ragkit.evaluate.spans import overlaps
from ragkit.experiments.byod import budget_depth
from ragkit.report import chunk_view, clip_lines, hits_text

top, last = table.iloc[0], table.iloc[-1]
best, worst = outcomes[(bench.name, top.strategy)], outcomes[(bench.name, last.strategy)]
gap = (best.per_query.set_index("query_id")[f"recall@B{B}"]
       - worst.per_query.set_index("query_id")[f"recall@B{B}"]).sort_values()
qid = gap.index[-1] if len(gap) and gap.iloc[-1] > 0 else None
display(Markdown(f"First: **{top.strategy}**; last: **{last.strategy}**. The first has more "
                 f"recall@B{B} than the last on {int((gap > 0).sum())} "
                 f"questions and less on {int((gap < 0).sum())}."))
if qid is not None:
    q = {x.id: x for x in bench.queries}[qid]
    docs = bench.docs_by_id()
    display(Markdown(f"**{q.id}: {q.text}** — {len(q.gold)} gold unit(s): "
                     + "; ".join(f"`{g.doc_id}` characters {g.start:,}–{g.end:,}"
                                 for g in q.gold)))
    for out in (best, worst):
        row = out.per_query.set_index("query_id").loc[qid]
        display(Markdown(f"*{out.strategy}* — recall@B{B} {row[f'recall@B{B}']:.0%}, "
                         f"span recall@{K} {row['recall']:.0%}"))
        for g in q.gold:  # the chunks around each gold unit: the gold's lines and neighbours
            shown, kept, total = clip_lines(chunk_view(docs[g.doc_id], out.chunks, g,
                                                       fmt="text"), 4, focus=r"^── ")
            print(f"chunks around {g.doc_id} [{g.start}:{g.end}] ({kept} of {total} lines):\n"
                  f"{shown}")
        print(hits_text(q, out.hits[q.id], k=2, lines=2))

# %% [markdown]
# span recall@5 and recall@B1024 are two views of the same ranking: the first
# reads the top five chunks whatever their size, the second packs chunks in rank order until
# `1024` tokens are full, so a strategy with small chunks reads further down its ranking.

# %%
if qid is not None:
    for out in (best, worst):
        row = out.per_query.set_index("query_id").loc[qid]
        packed = pack_context(out.retrieved(qid), B)
        ranks = [i for i, h in enumerate(out.hits[qid], 1)
                 if overlaps(h.chunk, q.gold, q.copies)][:4]
        print(f"{out.strategy}: chunks touching the gold at ranks {ranks or 'none'}; "
              f"the top {K} hold {row['recall']:.0%} of the gold characters (span recall@{K}); "
              f"{B:,} tokens hold its first {packed.units} chunks and "
              f"{row[f'recall@B{B}']:.0%} of them (recall@B{B})")
    (hb, db), (hw, dw) = ((budget_depth(o, q, B, K), o.per_query.set_index("query_id").loc[qid])
                          for o in (best, worst))
    tie = "they tie" if dw["recall"] == db["recall"] else "they differ"
    display(Markdown(
        f"So the {B:,}-token gap on {qid} is **" + ("budget depth" if hw["cause"] == "depth"
                                                    else hw["cause"]) + "**, how many chunks "
        f"fit, not where the chunk boundaries fall: {worst.strategy}'s first gold chunk is at "
        f"rank {hw['ranks'][0] if hw['ranks'] else 'none'}, while {B:,} tokens hold its first "
        f"{hw['units']} chunks ({best.strategy}'s hold {hb['units']}, gold at ranks "
        f"{hb['held']}). Read at `k = {K}` instead, {tie}: span recall@{K} "
        f"{dw['recall']:.0%} against {db['recall']:.0%}."))

# %% [markdown]
# ## Your leaderboard
# One row per strategy, all the questions with evidence, ranked by recall@B1024.

# %%
percent_frame(table, shares=[c for c in table.columns if c not in ("benchmark", "strategy",
                                                                  "flags", "n_chunks")],
              counts=["n_chunks"])

# %% [markdown]
# ## Two halves of the questions
# A strategy picked and then tested on the same questions is favoured by the very noise that
# put it first, so from here on a pick and its test use different questions. The questions are
# cut in two halves that share no gold unit, no gold text and, where the corpus has enough
# documents, no document (the glossary's *grouped split*: `results/splits.json` where it knows
# your questions, else computed from them by `ragkit.evaluate.splits`). A choice is made on the
# **tune half** and read on the **held-out half** only. The figure marks in orange the simple
# baseline (a fixed or recursive window, or a library splitter) with the most recall@B1024 on
# the tune half.

# %%
from ragkit.experiments import decide
from ragkit.report import bars, show_figure

# the simple baselines among the strategies: the course's seven, and any fixed or recursive
# window you added; the closing measures every other strategy against the one of them with
# the most recall@B1024 on the tune half (the halves are defined above)
baseline_labels = {c.label for c in simple_baselines()}
simple = [c.label for c in chunkers if c.label in baseline_labels
          or c.label.split("(")[0] in ("fixed_chars", "fixed_tokens", "recursive")]
base_pick = decide.tune_picks(outcomes, simple, budget=B).get(bench.name, chunkers[0].label)
show_figure(bars(table, f"recall@B{B}", group="benchmark", outcomes=outcomes,
                 baseline=base_pick,
                 title=f"recall@B{B} (share of gold characters) on {bench.name}\n(orange: "
                       f"{base_pick}, the simple baseline picked on the tune half)"),
            "08_your_documents_recall")
display(Markdown(f"Most recall@B{B} (an equal budget of {B:,} tokens) here: **{top.strategy}** "
                 f"({top[f'recall@B{B}']:.1%}; span recall@{K} {top[f'span recall@{K}']:.1%}); least: "
                 f"{table.iloc[-1].strategy} ({table.iloc[-1][f'recall@B{B}']:.1%}). Ranked by "
                 "the budget, not by `k`: at a fixed k, larger chunks find more by being "
                 "larger."))

# %% [markdown]
# ## Is the best strategy's lead more than chance?
# The board above ranks all the questions, so its first row is partly luck. With the two
# halves defined above: the strategy with the most recall@B1024 on the tune half is the pick;
# it is compared with each of the others on the held-out half only, paired over the same
# questions, by span recall@5 and by recall@B1024 (equal text reaching the model).

# %%
from ragkit.experiments import halves, held_out_steps, pick_on_tune
from ragkit.report import after_colon, finding, step_display, step_table

side = halves(bench)
pick, tune_means = pick_on_tune(outcomes, bench.name, list(table.strategy), side, budget=B)
others = [s for s in table.strategy if s != pick]
at_k = held_out_steps(outcomes, bench.name, pick, others, side, budget=None)
at_budget = held_out_steps(outcomes, bench.name, pick, others, side, budget=B)
n_tune, n_held = (sum(1 for q in answerable if side.get(q.id) == h) for h in ("tune", "held-out"))
display(Markdown(
    f"Picked on the tune half ({n_tune} questions): **{pick}**, recall@B{B} "
    f"{tune_means[pick]:.1%} there; the board's first row on all questions is "
    f"{'the same strategy' if pick == top.strategy else f'**{top.strategy}**'}. Each row below "
    f"is the pick minus another strategy on the held-out half ({n_held} questions): the "
    "difference in points with its paired 95 % interval."))
step_display(pd.concat([at_k.assign(metric=f"span recall@{K}"),
                        at_budget.assign(metric=f"recall@B{B}")]),
             columns=["metric", "step", "against"])

# %% [markdown]
# ## Exercises
# Each runs as written; change the value and run it again.
#
# 1. **Another strategy.** Add a chunker spec (here `fixed_tokens:256/0`; any name of
#    `ragkit.chunkers.REGISTRY` with optional `size/overlap`) and compare it on a slice of the
#    corpus (its first documents, so it takes seconds), against the pick above (the strategy
#    with the most recall@B1024 on the tune half) on all the slice's questions. Does it beat
#    it, and how many of its chunks are longer than MiniLM reads?

# %%
spec = "fixed_tokens:256/0"  # try "sentences", "recursive:500/50", "semantic"
part = bench.restrict([d.id for d in bench.documents[:10]])
best_chunker = next(c for c in chunkers if c.label == pick)
extra, extra_outcomes = compare([part], [get_chunker(spec), best_chunker], embedder, k=K,
                                experiment="exercise", return_outcomes=True)
display(percent_frame(extra[["strategy", f"recall@B{B}", "recall", "iou", "n_chunks"]]
                      .rename(columns={"recall": f"span recall@{K}"}),
                      shares=[f"recall@B{B}", f"span recall@{K}", "iou"], counts=["n_chunks"]))
display(Markdown("\n".join(
    f"- On the slice ({len(part.documents)} documents), by {metric}: "
    + after_colon(finding(r.comparison, r.step, r.against, metric))
    for budget, metric in ((None, f"span recall@{K}"), (B, f"recall@B{B}"))
    for r in step_table(extra_outcomes, [(get_chunker(spec).label, pick)],
                        budget=budget).itertuples())))
extra_lengths = embedder.count_tokens([c.text for c in get_chunker(spec).chunk_all(part.documents)])

# %% [markdown]
# 2. **Another budget.** The outcomes hold every budget of `ragkit.evaluate.BUDGETS`; compare
#    the pick and the others at `256` tokens (scarce context) instead of `1024` (nothing
#    re-embedded), on the held-out half as above. (The pick stays the one made at `1024`.)
#    Against how many strategies does the pick differ measurably at each budget, and does any
#    difference change sign?

# %%
at_scarce = held_out_steps(outcomes, bench.name, pick, others, side, budget=256)
step_display(at_scarce, columns=["step", "against"])

# %% [markdown]
# 3. **Another disagreement.** Look at the question with the second-largest gap between the
#    board's first and last strategy (`gap.index[-2]`): is the cause of its recall@B1024 gap
#    the same as on the worked question (which gold chunks each strategy's packed context
#    holds)?

# %%
if len(gap) > 1:
    q2 = {x.id: x for x in bench.queries}[gap.index[-2]]
    print(f"{q2.id}: {q2.text}\n")
    print(hits_text(q2, best.hits[q2.id], k=1))

# %% tags=["answers"] jupyter={"source_hidden": true, "outputs_hidden": true}
# Answers (expand to read). Exercise 1: the verdicts above, and what MiniLM reads of the chunks.
over = [n for n in extra_lengths if n > embedder.max_tokens]
print(f"Exercise 1: {len(over)} of {len(extra_lengths)} {get_chunker(spec).label} chunks exceed "
      f"{embedder.name}'s limit of {embedder.max_tokens} tokens (longest "
      f"{max(extra_lengths)}): dense search embeds only their start, so part of that "
      "strategy's text cannot be found by its vector, whatever the verdicts above.\n")
# Exercise 2: the pick against the others at 256 and at 1,024 tokens, held-out half.

def measurable(steps):
    return {r.against: (r.low > 0) - (r.high < 0) for r in steps.itertuples()
            if r.low > 0 or r.high < 0}


scarce, full = measurable(at_scarce), measurable(at_budget)
flipped = [s for s in scarce if s in full and scarce[s] != full[s]]
print(f"Exercise 2: the pick differs measurably from {len(scarce)} of {len(others)} strategies "
      f"at 256 tokens and from {len(full)} at {B:,}; "
      + (f"the sign changes against {', '.join(flipped)}" if flipped
         else "no measurable difference changes sign")
      + "; measurable at 256 only: " + (", ".join(sorted(set(scarce) - set(full))) or "none")
      + f"; at {B:,} only: " + (", ".join(sorted(set(full) - set(scarce))) or "none") + ".\n")
# Exercise 3: the two questions at the budget: which gold chunks each strategy's packed
# 1,024-token context holds (budget_depth: "held", "depth" = its first gold chunk is within the
# top k but past the chunks the budget holds, "ranking" = past both).
causes = {}
for gid in gap.index[-2:][::-1] if len(gap) > 1 else ():
    gq = {x.id: x for x in bench.queries}[gid]
    for out in (best, worst):
        d = budget_depth(out, gq, B, K)
        rb = out.per_query.set_index("query_id").loc[gid, f"recall@B{B}"]
        print(f"{gid}, {out.strategy}: gold chunks at ranks {d['ranks'][:4] or 'none'}; "
              f"{B:,} tokens hold its first {d['units']} chunks, gold ranks among them "
              f"{d['held'] or 'none'} (recall@B{B} {rb:.0%}): {d['cause']}")
    causes[gid] = budget_depth(worst, gq, B, K)["cause"]
if len(causes) == 2:
    (a, ca), (b, cb) = causes.items()
    print(f"\nExercise 3: the cause is {'the same' if ca == cb else 'not the same'}: on {a} "
          f"the last strategy's budget misses the gold by {ca}, on {b} by {cb}.")

# %%
print(rec.save())

# %%
from ragkit.experiments.byod import chunking_costs, headline
from ragkit.report import after_colon, finding, pct, ranked_closing

costs = chunking_costs(bench, chunkers)  # chunks cut and CPU seconds, each chunker cold
decisions = [d for c in chunkers if c.label not in simple
             for d in [decide.against_best(outcomes, c.label, simple, budget=B)] if d]
findings = (
    [f"{len(bench.documents)} documents, {len(bench.queries)} questions anchored by quote, "
     f"{sum(1 for q in bench.queries if q.gold)} of them with evidence and scored "
     f"({len(question_problems)} skipped); {len(table)} strategies compared.",
     f"Most recall@B{B} on all questions: **{top.strategy}** "
     f"({pct(top[f'recall@B{B}'])}); least: **{table.iloc[-1].strategy}** "
     f"({pct(table.iloc[-1][f'recall@B{B}'])}).",
     "What each strategy costs to build, before any embedding (chunks to embed and index, "
     "and CPU seconds to cut the corpus, one timed pass): " + "; ".join(
         f"{r.strategy} {r.n_chunks:,} chunks, {r.seconds:.2f} s" for r in costs.itertuples())
     + ".",
     f"Picked on the tune half ({n_tune} questions): **{pick}**; compared with each other "
     f"strategy on the held-out half ({n_held} questions):"]
    + [f"By span recall@{K}, held-out half: " + after_colon(finding(
        r.comparison, r.step, r.against, f"span recall@{K}")) for r in at_k.itertuples()]
    + [f"By recall@B{B}, held-out half: " + after_colon(finding(r.comparison, r.step,
                                                                r.against, f"recall@B{B}"))
       for r in at_budget.itertuples()]
)
closing = ranked_closing(decisions, findings, none="the strategies compared include no simple "
                         "baseline (fixed or recursive windows) to measure the others against")
windows = [s for s in simple if s.split("(")[0] in ("fixed_chars", "fixed_tokens", "recursive")]
title, calls = closing.split("\n\n", 1)  # the headline goes above the ranked calls
display(Markdown(f"{title}\n\n**Headline:** {headline(at_budget, pick, windows, f'recall@B{B}')} "
                 "The ranked calls below set each strategy against the best simple baseline "
                 "chosen on the tune half, a library splitter or a window.\n\n" + calls))
cost = costs.set_index("strategy")
display(Markdown(
    "Cost beside each line above (chunks to embed and index; CPU seconds to chunk the corpus): "
    + "; ".join(f"**{s}** {cost.n_chunks[s]:,} chunks, {cost.seconds[s]:.2f} s"
                for s in [d.technique for d in decisions] if s in cost.index)
    + f"; against **{base_pick}** {cost.n_chunks[base_pick]:,} chunks, "
      f"{cost.seconds[base_pick]:.2f} s."))
