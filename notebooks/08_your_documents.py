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
from IPython.display import HTML, Markdown, display

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
# ## Load the folder and anchor the questions

# %%
from ragkit.evaluate import load_folder

bench, file_errors, question_problems = load_folder(CORPUS, GOLDEN, name="your corpus")
answerable = [q for q in bench.queries if q.gold]
display(Markdown(
    f"{len(bench.documents)} documents read, {len(file_errors)} skipped; "
    f"{len(bench.queries)} questions anchored ({len(answerable)} with evidence), "
    f"{len(question_problems)} skipped."))
for line in file_errors + question_problems:
    print(line)

# %%
if settings.smoke:  # a quick slice for CI: the first ten documents and their questions
    bench = bench.restrict([d.id for d in bench.documents[:10]], 40)
    print(f"smoke profile: {len(bench.documents)} documents, {len(bench.queries)} questions")

# %% [markdown]
# ## Your leaderboard
# One row per strategy, all the questions with evidence, ranked by span recall at the budget.
# The columns, under the glossary's names: **recall@B1024**, the share of the gold characters
# inside the context packed to `B = 1024` cl100k tokens (hits in rank order, text already in
# it counted once); **pass@B1024**, the share of the gold units wholly inside it;
# **iou@B1024**, gold ∩ context over gold ∪ context. Then the top `k = 5` chunks, whatever
# their size: **recall@k** (span recall at k), **precision** and **iou** there,
# **precision_omega** (the best precision the chunking allows), **pass@k**, **mrr@k** (one
# over the rank of the first chunk that touches the gold) and **ndcg@10**; `n_chunks` is the
# number of chunks the strategy cut, and a `truncated:N` flag counts the chunks longer than the
# encoder's input, which dense search embeds only in part. The findings below write span
# recall at k as recall@5.

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
table = table.sort_values([f"recall@B{B}", "recall"], ascending=False).reset_index(drop=True)
percent_frame(table, shares=[c for c in table.columns if c not in ("benchmark", "strategy",
                                                                  "flags", "n_chunks")],
              counts=["n_chunks"])

# %%
from ragkit.report import bars, show_figure

show_figure(bars(table, f"recall@B{B}", group="benchmark", outcomes=outcomes,
                 baseline=chunkers[0].label,
                 title=f"Span recall at {B:,} tokens on {bench.name} "
                       f"(orange: {chunkers[0].label})"),
            "08_your_documents_recall")
top = table.iloc[0]
display(Markdown(f"Most span recall at an equal budget of {B:,} tokens here: **{top.strategy}** "
                 f"({top[f'recall@B{B}']:.1%}; at `k = {K}` {top.recall:.1%}); least: "
                 f"{table.iloc[-1].strategy} ({table.iloc[-1][f'recall@B{B}']:.1%}). Ranked by "
                 "the budget, not by `k`: at a fixed k, larger chunks find more by being "
                 "larger."))

# %% [markdown]
# ## Is the best strategy's lead more than chance?
# The board above ranks all the questions, so its first row is partly luck: a strategy picked
# and then tested on the same questions is favoured by the very noise that put it first. So
# the pick and the test use different questions. The questions are cut in two halves that
# share no gold unit, no gold text and, where the corpus has enough documents, no document
# (the glossary's *grouped split*: `results/splits.json` where it knows your questions, else computed from them by
# `ragkit.evaluate.splits`). The strategy with the most span recall at `1024` tokens on the
# **tune half** is the pick; it is compared with each of the others on the **held-out half**
# only, paired over the same questions, at `k = 5` and at `1024` tokens (equal text reaching
# the model).

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
    f"Picked on the tune half ({n_tune} questions): **{pick}**, span recall at {B:,} tokens "
    f"{tune_means[pick]:.1%} there; the board's first row on all questions is "
    f"{'the same strategy' if pick == top.strategy else f'**{top.strategy}**'}. Each row below "
    f"is the pick minus another strategy on the held-out half ({n_held} questions): the "
    "difference in points with its paired 95 % interval."))
step_display(pd.concat([at_k.assign(view=f"k = {K}"), at_budget.assign(view=f"{B} tokens")]),
             columns=["view", "step", "against"])

# %% [markdown]
# ## Where the strategies disagree
# The question on which the board's first and last strategy (all questions) differ most, with
# the chunks each one cut around the gold.

# %%
from ragkit.report import chunk_view, hits_text

best, worst = outcomes[(bench.name, top.strategy)], outcomes[(bench.name, table.iloc[-1].strategy)]
gap = (best.per_query.set_index("query_id")[f"recall@B{B}"]
       - worst.per_query.set_index("query_id")[f"recall@B{B}"]).sort_values()
qid = gap.index[-1] if len(gap) and gap.iloc[-1] > 0 else None
display(Markdown(f"The board's first strategy has more span recall than its last on "
                 f"{int((gap > 0).sum())} questions and less on {int((gap < 0).sum())}."))
if qid is not None:
    q = {x.id: x for x in bench.queries}[qid]
    doc = bench.docs_by_id()[q.gold[0].doc_id]
    display(Markdown(f"**{q.id}: {q.text}**"))
    for out in (best, worst):
        recall = out.per_query.set_index("query_id")[f"recall@B{B}"][qid]
        display(Markdown(f"*{out.strategy}* — span recall at {B:,} tokens {recall:.0%}"))
        display(HTML(chunk_view(doc, out.chunks, q.gold[0], context=200)))
        print(hits_text(q, out.hits[q.id], k=2, lines=6))

# %% [markdown]
# ## Exercises
# Each runs as written; change the value and run it again.
#
# 1. **Another strategy.** Add a chunker spec (here `fixed_tokens:256/0`; any name of
#    `ragkit.chunkers.REGISTRY` with optional `size/overlap`) and compare it on a slice of the
#    corpus (its first documents, so it takes seconds), against the pick above (the strategy
#    with the most span recall at `1024` tokens on the tune half) on all the slice's
#    questions. Does it beat it?

# %%
spec = "fixed_tokens:256/0"  # try "sentences", "recursive:500/50", "semantic"
part = bench.restrict([d.id for d in bench.documents[:10]])
best_chunker = next(c for c in chunkers if c.label == pick)
extra, extra_outcomes = compare([part], [get_chunker(spec), best_chunker], embedder, k=K,
                                experiment="exercise", return_outcomes=True)
display(percent_frame(extra[["strategy", f"recall@B{B}", "recall", "iou", "n_chunks"]],
                      shares=[f"recall@B{B}", "recall", "iou"], counts=["n_chunks"]))
display(Markdown("\n".join(
    f"- On the slice ({len(part.documents)} documents), at {view}: "
    + after_colon(finding(r.comparison, r.step, r.against, metric))
    for view, budget, metric in ((f"`k = {K}`", None, f"recall@{K}"),
                                 (f"{B:,} tokens", B, f"recall@B{B}"))
    for r in step_table(extra_outcomes, [(get_chunker(spec).label, pick)],
                        budget=budget).itertuples())))

# %% [markdown]
# 2. **Another budget.** The outcomes hold every budget of `ragkit.evaluate.BUDGETS`; compare
#    the pick and the others at `256` tokens (scarce context) instead of `1024` (nothing
#    re-embedded), on the held-out half as above. (The pick stays the one made at `1024`.)

# %%
step_display(held_out_steps(outcomes, bench.name, pick, others, side, budget=256),
             columns=["step", "against"])

# %% [markdown]
# 3. **Another disagreement.** Look at the question with the second-largest gap between the
#    board's first and last strategy (`gap.index[-2]`): is the cause the same?

# %%
if len(gap) > 1:
    q2 = {x.id: x for x in bench.queries}[gap.index[-2]]
    print(f"{q2.id}: {q2.text}\n")
    print(hits_text(q2, best.hits[q2.id], k=1))

# %% tags=["answers"] jupyter={"source_hidden": true, "outputs_hidden": true}
# Answer to exercise 3 (expand to read): the diagnosis of both questions under the board's
# last and first strategy, from the spans alone (`diagnose`, at k = 5): each verdict word is
# defined in the lines printed first. Exercises 1 and 2 answer themselves above.
from ragkit.report import DIAGNOSIS, diagnose

print("\n".join(f"{word}: {meaning}" for word, meaning in DIAGNOSIS.items()) + "\n")
for gid in gap.index[-2:][::-1] if len(gap) > 1 else ():
    gq = {x.id: x for x in bench.queries}[gid]
    print(f"{gid}, at k = {K}: last strategy's verdict "
          f"{diagnose(gq, worst.chunks, worst.hits[gid], K)['verdict']}, first's "
          f"{diagnose(gq, best.chunks, best.hits[gid], K)['verdict']}")

# %%
print(rec.save())

# %% [markdown]
# ## What we measured

# %%
from ragkit.experiments import decide
from ragkit.report import after_colon, finding, pct, ranked_closing

# the simple baselines among the strategies: the course's seven, and any fixed or recursive
# window you added
baseline_labels = {c.label for c in simple_baselines()}
simple = [c.label for c in chunkers if c.label in baseline_labels
          or c.label.split("(")[0] in ("fixed_chars", "fixed_tokens", "recursive")]
decisions = [d for c in chunkers if c.label not in simple
             for d in [decide.against_best(outcomes, c.label, simple, budget=B)] if d]
findings = (
    [f"{len(bench.documents)} documents, {len(bench.queries)} questions anchored by quote, "
     f"{sum(1 for q in bench.queries if q.gold)} of them with evidence and scored "
     f"({len(question_problems)} skipped); {len(table)} strategies compared.",
     f"Most span recall at {B:,} tokens on all questions: **{top.strategy}** "
     f"({pct(top[f'recall@B{B}'])}); least: **{table.iloc[-1].strategy}** "
     f"({pct(table.iloc[-1][f'recall@B{B}'])}).",
     f"Picked on the tune half ({n_tune} questions): **{pick}**; compared with each other "
     f"strategy on the held-out half ({n_held} questions):"]
    + [f"At `k = {K}`, held-out half: " + after_colon(finding(r.comparison, r.step, r.against,
                                                              f"recall@{K}"))
       for r in at_k.itertuples()]
    + [f"At {B:,} tokens, held-out half: " + after_colon(finding(r.comparison, r.step,
                                                                 r.against, f"recall@B{B}"))
       for r in at_budget.itertuples()]
)
display(Markdown(ranked_closing(decisions, findings, none="the strategies compared include no "
                               "simple baseline (fixed or recursive windows) to measure the "
                               "others against")))
