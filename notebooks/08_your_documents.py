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
# Every lesson ended with the same advice: build a small golden set on *your* documents and
# measure before you change anything. This notebook does exactly that. Point it at a folder
# (Markdown, plain text, HTML or source code; metadata from front matter or a `metadata.csv`
# sidecar) and a questions file whose evidence is written as verbatim quotes:
#
# ```json
# {"id": "q1", "question": "How long is the Gold refund window?",
#  "evidence": [{"doc_id": "refund-policy", "quote": "| Gold | 14 days |"}]}
# ```
#
# ragkit finds each quote in the documents (exactly, then ignoring whitespace) and scores every
# strategy against those spans. A quote that is missing or appears twice is reported with its
# line — never guessed. Set `RAGKIT_BYOD_CORPUS` and `RAGKIT_BYOD_GOLDEN` to your own paths;
# by default the notebook runs on the course corpus and its quote-based questions. The same
# comparison runs from a shell with `ragkit eval --corpus DIR --golden FILE`.

# %%
from IPython.display import HTML, Markdown, display

from ragkit.config import get_settings, seed_everything

seed_everything()
settings = get_settings()
CORPUS, GOLDEN = str(settings.byod_corpus), str(settings.byod_golden)
STRATEGIES = settings.byod_strategies
K = 5
print(CORPUS, GOLDEN, STRATEGIES, sep="\n")

# %% [markdown]
# ## Load the folder and anchor the questions

# %%
from ragkit.benchmarks import load_folder

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

# %%
from ragkit.chunkers import get_chunker
from ragkit.embed import Embedder
from ragkit.pipeline import compare
from ragkit.results import Recorder

rec = Recorder("08_your_documents")
embedder = Embedder()
chunkers = [get_chunker(s) for s in STRATEGIES.split(",")]
table, outcomes = compare([bench], chunkers, embedder, rec, k=K, experiment="byod",
                          return_outcomes=True)
table = table.sort_values(["recall", "iou"], ascending=False).reset_index(drop=True)
pct = ["recall", "precision", "iou", "precision_omega", "recall@k", "mrr@k", "ndcg@10"]
table.style.format({m: "{:.1%}" for m in pct} | {"n_chunks": "{:.0f}"})

# %%
from ragkit.plots import bars
from ragkit.results import save_figure

fig = bars(table, "recall", group="benchmark", title=f"Span recall@{K} on {bench.name}")
save_figure(fig, "08_your_documents_recall")
top = table.iloc[0]
display(Markdown(f"Best span recall here: **{top.strategy}** ({top.recall:.1%}, IoU "
                 f"{top.iou:.1%}); worst: {table.iloc[-1].strategy} "
                 f"({table.iloc[-1].recall:.1%})."))

# %% [markdown]
# ## Where the strategies disagree
# The question on which the best and the worst strategy differ most, with the chunks each one
# cut around the gold.

# %%
from ragkit.explain import chunk_view, hits_table

best, worst = outcomes[(bench.name, top.strategy)], outcomes[(bench.name, table.iloc[-1].strategy)]
gap = (best.per_query.set_index("query_id")["recall"]
       - worst.per_query.set_index("query_id")["recall"]).sort_values()
qid = gap.index[-1] if len(gap) else None
if qid is not None:
    q = {x.id: x for x in bench.queries}[qid]
    doc = bench.docs_by_id()[q.gold[0].doc_id]
    display(Markdown(f"**{q.id}: {q.text}**"))
    for out in (best, worst):
        display(Markdown(f"*{out.strategy}* — span recall {out.per_query.set_index('query_id').recall[qid]:.0%}"))
        display(HTML(chunk_view(doc, out.chunks, q.gold[0], context=200)))
        display(hits_table(q, out.hits[q.id], k=3))

# %%
print(rec.save())
