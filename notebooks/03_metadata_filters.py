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
# # 03 · Metadata filters: the right document before the right chunk
#
# Some questions are answered by one document among several that read almost the same: the EU
# expense policy and the US one, the 2021 fee schedule and the 2024 one. Similarity cannot tell
# them apart — the sentences are nearly identical — but metadata can. This notebook measures
# three ways of searching the course corpus:
#
# - **no filter**: every chunk competes, superseded documents included;
# - **self-query**: a filter read off the question by rules (named regions, products, years),
#   superseded documents excluded unless a year asks for them;
# - **oracle**: the filter the golden set says the question needs (its `context`) — the upper
#   bound of what filtering can do.
#
# The filter is applied *before* the search (`ragkit.index`), so a narrow filter still returns
# k chunks.

# %%
from IPython.display import Markdown, display

from ragkit.config import get_settings, seed_everything

seed_everything()
settings = get_settings()

# %%
from ragkit.benchmarks import load_course
from ragkit.chunkers import StructureChunker
from ragkit.embed import Embedder
from ragkit.filters import Catalog

course = load_course()
catalog = Catalog(course.documents)
filtered = [q for q in course.queries if q.context and q.gold]
if settings.smoke:
    filtered = filtered[::3]
display(Markdown(f"{len(filtered)} golden questions need a filter "
                 f"({sum('as_of' in q.context for q in filtered)} by date, "
                 f"{sum('region' in q.context for q in filtered)} by region, "
                 f"{sum('product' in q.context for q in filtered)} by product)."))

# %% [markdown]
# ## Three searches, same chunks
# Chunks come from the structure chunker of notebook 02; the retriever is dense (MiniLM) and,
# separately, BM25 — the filter works the same way on both.

# %%
import pandas as pd

from ragkit.benchmarks import Benchmark
from ragkit.pipeline import run_experiment
from ragkit.results import Recorder

rec = Recorder("03_metadata_filters")
embedder = Embedder()
chunker = StructureChunker()
chunks = chunker.chunk_all(course.documents)
bench = Benchmark("course-filtered", course.documents, filtered)
modes = {
    "no filter": None,
    "self-query": lambda q: catalog.read_question(q.text),
    "oracle": lambda q: catalog.from_context(q.context),
}
rows = []
for retriever in ("dense", "bm25"):
    for mode, where in modes.items():
        out = run_experiment(bench, chunker, embedder, k=5, chunks=chunks, retriever=retriever,
                             where=where, label=f"{chunker.label} · {mode}")
        out.record(rec, experiment="filters", embedder=embedder.name if retriever == "dense"
                   else "bm25", k=5, filter=mode)
        rows.append({"retriever": retriever, "filter": mode, **{m: out.means[m] for m in (
            "recall", "iou", "recall@k", "mrr@k", "ndcg@10")}})
filters_table = pd.DataFrame(rows)
filters_table.style.format({m: "{:.1%}" for m in ("recall", "iou", "recall@k", "mrr@k",
                                                   "ndcg@10")})

# %%
pivot = filters_table.pivot(index="retriever", columns="filter", values="recall@k")
for r in pivot.index:
    display(Markdown(
        f"**{r}**: recall@5 {pivot.loc[r, 'no filter']:.1%} without a filter, "
        f"{pivot.loc[r, 'self-query']:.1%} with the self-query filter, "
        f"{pivot.loc[r, 'oracle']:.1%} with the oracle filter."))

# %% [markdown]
# ## Does the self-query read the questions right?
# Agreement between the filter read off each question and the one the golden set records.

# %%
agree = pd.DataFrame([{"query_id": q.id, "question": q.text[:70], "needs": q.context,
                       "read": catalog.read_question(q.text).describe()} for q in filtered])
agree["region ok"] = [a.get("region") == n.get("region") for a, n in zip(agree.read, agree.needs)]
agree["year ok"] = [("as_of" in a) == ("as_of" in n) for a, n in zip(agree.read, agree.needs)]
display(Markdown(f"Region read correctly for {agree['region ok'].mean():.0%} of the questions; "
                 f"a date constraint detected for {agree['year ok'].mean():.0%}."))
agree[~(agree["region ok"] & agree["year ok"])]

# %% [markdown]
# ## The superseded fee schedule
# "In 2022, how much did the Priority support add-on cost?" — the 2021 schedule was still in
# force in 2022. Without a filter the newer schedule competes; with the date read off the
# question only the document in force that year is searched.

# %%
from ragkit.explain import hits_table
from ragkit.retrieve import DenseRetriever

dense = DenseRetriever(chunks, embedder)
q = next(q for q in course.queries if q.id == "q024")
for mode in ("no filter", "self-query"):
    where = modes[mode](q) if modes[mode] else None
    display(Markdown(f"**{mode}** ({where.describe() if where else '—'}):"))
    display(hits_table(q, dense.search([q.text], 3, where)[0], k=3))

# %% [markdown]
# ## Ambiguous questions: readings, not a guess
# "What is the 90-day rule?" has four right answers in four documents. Instead of returning
# the single best match, `Catalog.readings` returns one candidate reading per document that
# scores close to the best, plus the regional variants of the best document. We measure how
# many gold documents the readings name, and how often an unambiguous question is wrongly
# flagged.

# %%
from ragkit.filters import readings_report
from ragkit.retrieve import BM25Retriever

bm25 = BM25Retriever(chunks)
ambiguous = [q for q in course.queries if q.type == "ambiguous"]
plain = [q for q in course.queries if q.gold and q.type == "lookup" and not q.context]
if settings.smoke:
    plain = plain[::6]
qs = ambiguous + plain
hits = dict(zip([q.id for q in qs], bm25.search([q.text for q in qs], 20, catalog.filter())))
report = readings_report(qs, hits, catalog)
amb = report[report.type == "ambiguous"]
unamb = report[report.type != "ambiguous"]
for metric, value in {"ambiguous_flagged": amb.flagged_ambiguous.mean(),
                      "ambiguous_gold_docs_named": amb.gold_docs_named.mean(),
                      "unambiguous_flagged": unamb.flagged_ambiguous.mean()}.items():
    rec.add(experiment="readings", benchmark="course", strategy=chunker.label, metric=metric,
            value=value, embedder="bm25", k=20, n_queries=len(qs))
display(Markdown(
    f"Ambiguous questions flagged: **{amb.flagged_ambiguous.mean():.0%}** of {len(amb)}; their "
    f"readings name {amb.gold_docs_named.mean():.0%} of the gold documents. Unambiguous "
    f"lookups wrongly flagged: {unamb.flagged_ambiguous.mean():.0%} of {len(unamb)}."))
amb[["query_id", "readings", "gold_docs", "gold_docs_named", "documents"]]

# %% [markdown]
# ## The same idea on Chroma's benchmark
# Chroma's questions each belong to one of five corpora and the report searches one index
# holding all five. Its only metadata is the corpus, so the oracle filter there is "search the
# question's own corpus" — a measure of how much cross-corpus confusion costs. Anthropic's
# code set has no metadata a question names, so there is nothing to filter on.

# %%
from ragkit.benchmarks import load

chroma = load("chroma").for_profile()
chroma_chunks = StructureChunker().chunk_all(chroma.documents)
chroma_rows = []
for mode, where in {"no filter": None,
                    "oracle corpus": lambda q: {"doc_id": q.metadata["corpus_id"]}}.items():
    out = run_experiment(chroma, chunker, embedder, k=5, chunks=chroma_chunks, where=where,
                         label=f"{chunker.label} · {mode}")
    out.record(rec, experiment="filters", embedder=embedder.name, k=5, filter=mode)
    chroma_rows.append({"filter": mode, **{m: out.means[m] for m in ("recall", "iou",
                                                                      "recall@k")}})
pd.DataFrame(chroma_rows).style.format({m: "{:.1%}" for m in ("recall", "iou", "recall@k")})

# %%
print(rec.save())
