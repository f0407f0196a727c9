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
# Terms: every metric, word and seed essay, defined once: [glossary](../docs/glossary.md).
#
# Seed 000 calls a metadata filter "the cheapest recall win in RAG", and seed 003 says of
# documents that share a phrase that "semantic search alone can't separate them". The course
# corpus has such documents: the EU expense policy and the US one, the 2021 fee schedule and
# the 2024 one, a refund policy and the one that replaced it.
#
# **The question this notebook answers:** on the course questions that need one document
# among look-alikes, does filtering by metadata before the search find more of the gold than
# searching everything? And when the filter is read off the question by simple rules, as a
# self-querying retriever does, does it help or hurt? We compare three searches:
#
# - **no filter**: every chunk competes, superseded documents included;
# - **self-query**: a filter read off the question by rules (named regions, products, years),
#   superseded documents excluded unless a year asks for them;
# - **oracle**: the filter the golden set says the question needs (its `context`), the upper
#   bound of what filtering can do.
#
# The filter is applied *before* the search (`ragkit.retrieve.index`), so a narrow filter still returns
# `k = 5` chunks.

# %%
from IPython.display import Markdown, display

from ragkit.config import get_settings, seed_everything
from ragkit.report import quiet_cells

quiet_cells()  # each cell's warnings as one line per kind
seed_everything()
settings = get_settings()

# %%
from ragkit.chunkers import StructureChunker
from ragkit.embed import Embedder
from ragkit.evaluate import load_course
from ragkit.retrieve import Catalog

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
# separately, BM25. The filter works the same way on both. Each search is scored on its top
# `k = 5` chunks with the glossary's metrics, under the glossary's names (the tables' headers
# use them):
#
# - **pass@k** (pass@5 here): the share of the question's gold units wholly inside the top k;
#   the code reads it from the results rows' column that `PASS` names;
# - **span recall@k** (span recall@5 here): the share of the gold characters inside the top k
#   (a gold unit half inside counts half here, and nothing in pass@k);
# - **IoU**: gold characters retrieved over the gold and retrieved characters together;
# - **MRR@k**: one over the rank of the first chunk that touches the gold (nothing when none of
#   the top k does); **nDCG@10**: the top ten ranked by the share of new gold each adds.
#
# The comparisons and the verdict below read pass@5: the question is whether the whole piece of
# evidence reaches the model. The next cell runs the six searches (two retrievers, three
# filters); one question comes first, to show what a filter does, then the means.

# %%
import pandas as pd

from ragkit.evaluate import Benchmark
from ragkit.experiments import run_experiment
from ragkit.report import Recorder, percent_frame

rec = Recorder("03_metadata_filters")
embedder = Embedder()
chunker = StructureChunker()
chunks = chunker.chunk_all(course.documents)
bench = Benchmark("course-filtered", course.documents, filtered)
modes = {"no filter": None,
         "self-query": lambda q: catalog.read_question(q.text),
         "oracle": lambda q: catalog.from_context(q.context)}
outcomes = {}
for retriever in ("dense", "bm25"):
    for mode, where in modes.items():
        out = outcomes[retriever, mode] = run_experiment(
            bench, chunker, embedder, k=5, chunks=chunks, retriever=retriever, where=where,
            label=f"{chunker.label} · {mode}")
        out.record(rec, experiment="filters", k=5, filter=mode,
                   embedder=embedder.name if retriever == "dense" else "bm25")
PASS = "pass@k"  # the glossary's pass@k; "recall" holds span recall@k
metrics = ["recall", "iou", PASS, "mrr@k", "ndcg@10"]
HEADERS = {"recall": "span recall@5", "iou": "IoU@5", PASS: "pass@5", "mrr@k": "MRR@5",
           "ndcg@10": "nDCG@10"}  # one name per metric, the glossary's, in every table below
display(Markdown(f"{len(outcomes)} searches run, each over {len(filtered)} questions."))

# %% [markdown]
# ## One question fixed, one broken
# Before any mean, what the self-query filter does to single questions. `filter_flips` lists the
# questions whose pass@5 changes when the filter is applied to the dense search; below are the
# first it fixes and the first it breaks, with the top two hits without a filter and with the
# filter read off the question: each hit's header, its prefix, and one line of it (the line
# that holds the gold, between ⟦ and ⟧; else its first line).

# %%
from ragkit.report import hits_text
from ragkit.retrieve import DenseRetriever, filter_flips, flip_reason

flips = {r: filter_flips(filtered, catalog, outcomes[r, "no filter"], outcomes[r, "self-query"])
         for r in ("dense", "bm25")}
dense = DenseRetriever(chunks, embedder)
by_id = {q.id: q for q in filtered}
for change in ("fixed", "broken"):
    rows = flips["dense"][flips["dense"].change == change]
    if rows.empty:
        display(Markdown(f"_No question is {change} by the self-query filter in this run._"))
        continue
    q = by_id[rows.query_id.iloc[0]]
    where = catalog.read_question(q.text)
    display(Markdown(f"### {change}: {q.id} · {q.text}\nNeeds `{dict(q.context)}`; the rules "
                     f"read `{where.describe()}`; gold in `{rows.gold_docs.iloc[0]}`."))
    for label, flt in (("no filter", None), ("self-query", where)):
        print(f"══ {label}\n" + hits_text(q, dense.search([q.text], 2, flt)[0], k=2, lines=1))
    display(Markdown(flip_reason(q, where, rows["gold kept"].iloc[0], change)))

# %% [markdown]
# ## Over all the questions that need a filter
# The six searches' means, and each mean's difference from no filter on the same retriever
# (Δ, in points).

# %%
filters_table = pd.DataFrame([{"retriever": r, "filter": m, **{x: o.means[x] for x in metrics}}
                              for (r, m), o in outcomes.items()])
for x in ("recall", PASS):  # each mean's paired difference from no filter, unrounded first
    base = filters_table.groupby("retriever")[x].transform(lambda v: v.iloc[0])
    filters_table[f"Δ {HEADERS[x]}"] = (100 * (filters_table[x] - base)).map("{:+.1f}".format)
percent_frame(filters_table.rename(columns=HEADERS), shares=[HEADERS[x] for x in metrics])

# %% [markdown]
# Each filter against no filter, on the same questions, with its paired 95 % interval
# (`ragkit.evaluate.versus`).

# %%
from ragkit.evaluate import versus
from ragkit.report import finding


def compare(retriever, mode, against="no filter", metric=PASS):
    return versus(outcomes[retriever, mode].values(metric),
                  outcomes[retriever, against].values(metric))


comparisons = {(r, m): compare(r, m) for r in ("dense", "bm25") for m in ("self-query", "oracle")}
display(Markdown("\n".join(
    "- " + finding(c, m, "no filter", f"pass@5 ({r})") for (r, m), c in comparisons.items())))

# %% [markdown]
# ## How many questions change
# A mean does not say how many questions move. Below, every question whose pass@5 changes when the
# self-query filter is applied to the dense search (the two above among them): the filter read
# off the question, the filter the golden set needs, and whether the filter read keeps the gold
# document at all.

# %%
for r, f in flips.items():
    fixed, broken = (f.change == "fixed").sum(), (f.change == "broken").sum()
    display(Markdown(
        f"**{r}**: the self-query filter changes {len(f)} of {len(filtered)} questions: it "
        f"fixes {fixed} and breaks {broken}; in {(~f['gold kept']).sum()} of the changed "
        "questions the filter read excludes the gold document, so the right text is never "
        "searched."))
pd.set_option("display.max_colwidth", None)
flips["dense"]

# %% [markdown]
# ## Does the self-query read the questions right?
# Agreement between the filter read off each question and the one the golden set records;
# the table lists the questions it reads wrong.

# %%
agree = pd.DataFrame([{"query_id": q.id, "question": q.text, "needs": dict(q.context),
                       "read": catalog.read_question(q.text).describe()} for q in filtered])
agree["region ok"] = [a.get("region") == n.get("region") for a, n in zip(agree.read, agree.needs)]
agree["year ok"] = [("as_of" in a) == ("as_of" in n) for a, n in zip(agree.read, agree.needs)]
# each constraint counted over the questions that need it, and the extra ones it adds elsewhere
need_region = agree[[("region" in n) for n in agree.needs]]
need_date = agree[[("as_of" in n) for n in agree.needs]]
extra_date = sum(("as_of" in a) and ("as_of" not in n) for a, n in zip(agree.read, agree.needs))
reading = (f"Of the {len(need_region)} questions that need a region, the rules read the right "
           f"region for {int(need_region['region ok'].sum())}; of the {len(need_date)} that need "
           f"a date, they detect one for {int(need_date['year ok'].sum())}; they add a date to "
           f"{extra_date} of the {len(agree) - len(need_date)} questions that need none.")
display(Markdown(reading))
agree[~(agree["region ok"] & agree["year ok"])]

# %% [markdown]
# ## Ambiguous questions: readings, not a guess
# A question such as `What is the 90-day rule?` has several right answers in several
# documents. Instead of returning the single best match, `Catalog.readings` returns one
# candidate reading per document that scores close to the best, plus the regional variants of
# the best document. "Close" is set by the **margin**, a share of the best hit's BM25 score:
# a document counts when one of its hits scores at least `(1 - margin)` times the best one
# (`margin = 0.25` by default). We measure how many gold documents the readings name, and how often an
# unambiguous question is wrongly flagged.

# %%
from ragkit.evaluate import wilson
from ragkit.report import ci, pct
from ragkit.retrieve import BM25Retriever, readings_report, readings_summary

bm25 = BM25Retriever(chunks)
ambiguous = [q for q in course.queries if q.type == "ambiguous"]
plain = [q for q in course.queries if q.gold and q.type == "lookup" and not q.context]
if settings.smoke:
    plain = plain[::6]
qs = ambiguous + plain
hits = dict(zip([q.id for q in qs], bm25.search([q.text for q in qs], 20, catalog.filter())))
report = readings_report(qs, hits, catalog)
readings = readings_summary(report)
for metric in ("ambiguous_flagged", "ambiguous_gold_docs_named", "unambiguous_flagged"):
    rec.add(experiment="readings", benchmark="course", strategy=chunker.label, metric=metric,
            value=readings[metric], embedder="bm25", k=20, n_queries=len(qs))


def flagged(summary, kind):
    """The share of `kind` questions flagged, with its Wilson 95 % interval, as words."""
    n = int(summary[f"n_{kind}"])
    share, low, high = wilson(round(summary[f"{kind}_flagged"] * n), n)
    return f"{pct(share)} of {n} {ci(low, high, signed=False)}"


display(Markdown(
    f"Ambiguous questions flagged: **{flagged(readings, 'ambiguous')}**; their readings name "
    f"{pct(readings['ambiguous_gold_docs_named'])} of the gold documents. Unambiguous lookups "
    f"wrongly flagged: {flagged(readings, 'unambiguous')} (Wilson 95 % intervals, in %)."))
text_of = {q.id: q for q in qs}
for r in report[report.type == "ambiguous"].itertuples():  # two lines per question
    q = text_of[r.query_id]
    print(f"{r.query_id} · {q.text}\n   gold in {', '.join(sorted({g.doc_id for g in q.gold}))}"
          f" · {r.readings} reading(s): {r.documents} · gold named {r.gold_docs_named:.0%}")

# %% [markdown]
# ## The same idea on Chroma's benchmark
# Chroma's questions each belong to one of five corpora and the report searches one index
# holding all five. Its only metadata is the corpus, so the oracle filter there is "search the
# question's own corpus": a measure of how much cross-corpus confusion costs. Anthropic's
# code set has no metadata a question names, so there is nothing to filter on.

# %%
from ragkit.evaluate import load

chroma = load("chroma").for_profile()
chroma_chunks = StructureChunker().chunk_all(chroma.documents)
chroma_out = {}
for mode, where in {"no filter": None,
                    "oracle corpus": lambda q: {"doc_id": q.metadata["corpus_id"]}}.items():
    chroma_out[mode] = run_experiment(chroma, chunker, embedder, k=5, chunks=chroma_chunks,
                                      where=where, label=f"{chunker.label} · {mode}")
    chroma_out[mode].record(rec, experiment="filters", embedder=embedder.name, k=5, filter=mode)
percent_frame(pd.DataFrame([{"filter": m, **{HEADERS[x]: o.means[x] for x in ("recall", "iou", PASS)}}
                            for m, o in chroma_out.items()]))

# %% [markdown]
# ## Pruning the corpus
# Seed 002 ends on decisions to *remove* text: "Internal memos superseded by later memos are
# noise", and "Adding more documents does not monotonically improve retrieval". Filters hide
# old documents per question; pruning drops them, with other noise, from the index for good.
#
# **The question:** on the course questions, does span recall at a fixed budget fall as
# distractor documents join the index, and does pruning give it back? The metric is
# **recall@B**: the share of the gold characters inside the context packed to a budget of B
# cl100k tokens (here `B = 1024`, chunks of `FixedCharChunker(1000, 200)`, dense search); it
# reads whole hits in rank order, not a fixed k. The index grows in steps:
#
# - the course corpus alone (its superseded documents included, as before);
# - plus a badly extracted copy of the 2024 fee schedule, made by code (`ragkit.experiments.garble`:
#   pipes and line breaks removed, table cells run together), same metadata, new doc id;
# - plus the first of Chroma's corpora as distractor documents, then more of them.
#
# Pruning (`ragkit.experiments.prune.prune`) then drops, in order: chunks of documents whose metadata says
# they are superseded (the rule of `ragkit.retrieve.filters`); chunks that look like a flattened table
# (long, no line break and no pipe, many digits) or are empty; chunks whose text repeats
# another's after whitespace normalisation (the newest document's copy kept). Gold text in a
# pruned document still counts, so a question about a superseded document has its gold pruned
# away.
#
# First the two rules at work, on one example each: a chunk of the badly extracted fee
# schedule beside the same characters of the original table, and a question whose gold lies
# in a document a later version supersedes.

# %%
from ragkit.chunkers import FixedCharChunker
from ragkit.experiments import garble, gold_in_superseded
from ragkit.experiments.prune import looks_garbled

fee = course.docs_by_id()["fee-schedule-2024"]
bad = garble(fee)
bad_chunk = next(c for c in FixedCharChunker(1000, 200).chunk(bad) if looks_garbled(c.text))
table_at = fee.text.find("|")  # where the original's first table row starts
cells_at = max(bad_chunk.text.find("$") - 80, 0)  # the flattened table inside the chunk
print(f"=== a chunk of the garbled copy ({bad.id}, chars {bad_chunk.start}–{bad_chunk.end}), "
      f"which the flattened-table rule drops; its table part:\n"
      f"… {bad_chunk.text[cells_at:cells_at + 320]} …")
print(f"=== the original's table, as it was written ({fee.id}):\n"
      + "\n".join(fee.text[table_at:].split("\n")[:4]))
old = sorted(gold_in_superseded(course.queries, course.documents))
if old:
    oq = next(q for q in course.queries if q.id == old[0])
    g = oq.gold[0]
    doc = course.docs_by_id()[g.doc_id]
    print(f"=== {len(old)} questions have their gold in a superseded document, e.g. {oq.id}: "
          f"{oq.text}\ngold, in {g.doc_id} (metadata: {doc.metadata}):\n"
          f"{doc.text[g.start:g.end]}\npruning drops every chunk of {g.doc_id}, so this "
          "question can be credited only through identical text in a kept document.")

# %%
from ragkit.config import pick
from ragkit.experiments import garble, gold_in_superseded, grow
from ragkit.experiments.prune import measure
import matplotlib.pyplot as plt
import numpy as np
from ragkit.report import show_figure

fixed = FixedCharChunker(1000, 200)
small = course.for_profile()
garbled = garble(course.docs_by_id()["fee-schedule-2024"])
sizes = grow(small.documents, load("chroma").documents, garbled,
             n_distractors=pick(full=(1, 3, 5), smoke=(1,)))
pruning = measure(sizes, small.queries, fixed, embedder, budget=1024)
for (size, pruned), out in pruning.outcomes.items():
    out.record(rec, experiment="pruning", embedder=embedder.name, k=5, corpus=size, pruned=pruned)
B = f"recall@B{pruning.budget}"
# each index against the course alone, unpruned: the paired difference with its 95 % interval
fig, ax = plt.subplots(figsize=(7, 4))
for pruned, style in ((False, "o-"), (True, "s--")):
    rows = pruning.table[pruning.table.pruned == pruned]
    cs = [pruning.versus((size, pruned), ("course", False)) for size in rows["size"]]
    diff = np.array([100 * c.diff for c in cs])
    err = np.array([[100 * (c.diff - c.low) for c in cs], [100 * (c.high - c.diff) for c in cs]])
    ax.errorbar(rows.n_chunks, diff, yerr=err, fmt=style, capsize=3,
                label="pruned" if pruned else "unpruned")
ax.axhline(0, color="grey", lw=1, label="baseline: course alone, unpruned")
ax.set_xlabel("chunks in the index")
ax.set_ylabel(f"span recall at {pruning.budget:,} tokens,\ndifference (points, 95 % CI)")
ax.set_title(f"Course questions: {B} against the course alone as the index grows")
ax.legend(fontsize=8)
show_figure(fig, "03_pruning")
percent_frame(pruning.table, shares=[B],
              counts=[c for c in pruning.table.columns if c.startswith(("n_", "dropped"))])

# %% [markdown]
# The largest corpus against the course alone, and pruned against unpruned at the largest
# size, on the same questions (paired 95 % intervals). Pruning by metadata removes the gold of
# the questions about superseded documents, so the last line compares only the questions whose
# gold is in current documents.

# %%
from ragkit.report import after_colon

big = list(sizes)[-1]
old_gold = gold_in_superseded(small.queries, small.documents)
current = [q for q in pruning.values[big, True].index if q not in old_gold]
grew = pruning.versus((big, False), ("course", False))
gave_back = pruning.versus((big, True), (big, False))
gave_back_current = pruning.versus((big, True), (big, False), on=current)
flat_dropped = int(pruning.table.set_index(["size", "pruned"]).loc[(big, True),
                                                                    "dropped: garbled or empty"])
flat_copy = len(fixed.chunk_all([garbled]))
pruning_findings = [
    finding(grew, f"course {big}", "course alone", f"{B} (unpruned)"),
    finding(gave_back, "pruned", "unpruned", f"{B} (course {big})"),
    finding(gave_back_current, "pruned", "unpruned",
            f"{B} (course {big}; the questions whose gold is in current documents)"),
    f"{len(old_gold)} of the {grew.n} questions have their gold in a superseded document; "
    "pruning by metadata takes those documents out of the index, so their gold is credited only "
    "where identical text stands in a kept document (a copy earns the gold's credit): "
    + after_colon(finding(pruning.versus((big, True), (big, False), on=sorted(old_gold)),
                          "pruned", "unpruned", f"{B} (those questions)")),
    f"The flattened-table rule drops {flat_dropped} chunks at the largest size: the garbled "
    f"copy has {flat_copy}"
    + (f"; the other {flat_dropped - flat_copy} are chunks of Chroma's corpora that the rule "
       "also reads as flattened tables." if flat_dropped > flat_copy else "."),
]
display(Markdown("\n".join("- " + s for s in pruning_findings)))

# %% [markdown]
# ## Each rule on its own
# The three rules were applied together above, so a gain from one could hide a loss from
# another. Here each rule alone prunes the largest index, against the same index unpruned, on
# the questions that rule can serve: the metadata rule is read on the questions whose gold is in
# current documents (on the others it deletes the gold by design, shown apart); the two other
# rules on every question.

# %%
from ragkit.experiments.prune import measure_rules
from ragkit.report import diff_ci

each_rule = measure_rules(sizes[big], small.queries, fixed, embedder, budget=pruning.budget)
unpruned = pruning.values[big, False]
rule_on = {"superseded": current, "garbled or empty": None, "duplicate": None}
rule_vs = {r: versus(v, unpruned, on=rule_on[r]) for r, (v, _) in each_rule.items()}
old_vs = versus(each_rule["superseded"][0], unpruned, on=sorted(old_gold))
pd.DataFrame([{"rule (alone)": r, "chunks dropped": each_rule[r][1],
               "questions": "gold in current documents" if rule_on[r] else "all",
               f"Δ {B}": diff_ci(c), "n": c.n} for r, c in rule_vs.items()]
             + [{"rule (alone)": "superseded", "chunks dropped": each_rule["superseded"][1],
                 "questions": "gold in superseded documents", f"Δ {B}": diff_ci(old_vs),
                 "n": old_vs.n}])

# %% [markdown]
# ## Exercises
# 1. **Keep superseded documents when no year is read.** The broken question above fails
#    because the self-query excludes superseded documents by default. Set
#    `include_superseded=True` in the reader below and look at how many questions are fixed
#    and broken now.
# 2. **Ask your own question.** Change `my_question` and see which filter the rules read and
#    what comes back with and without it. Try a year written without "in" ("the 2022 fee
#    schedule").
# 3. **Loosen the readings.** Raise the margin (defined with the readings above): does the
#    share of ambiguous questions flagged move at all, and what happens to the unambiguous
#    lookups wrongly flagged? (The answers compare two margins, each share with its Wilson
#    interval; a looser margin can cost precision without finding any more ambiguity.)

# %%
# Exercise 1: the self-query filter, keeping superseded documents when no year is read
include_superseded = False


def reader(q):
    return catalog.filter(**catalog.read_question(q.text).describe(),
                          include_superseded=include_superseded)


variant = run_experiment(bench, chunker, embedder, k=5, chunks=chunks, where=reader,
                         label=f"{chunker.label} · self-query variant")
f = filter_flips(filtered, catalog, outcomes["dense", "no filter"], variant, read=reader)
print(f"include_superseded={include_superseded}: fixes {(f.change == 'fixed').sum()}, "
      f"breaks {(f.change == 'broken').sum()} of {len(filtered)} questions")

# %%
# Exercise 2: your own question
my_question = "In 2022, how much did the Priority support add-on cost?"
where = catalog.read_question(my_question)
print("filter read:", where.describe() or "none (current documents only)")
for flt in (None, where):
    top = dense.search([my_question], 3, flt)[0]
    print([f"{h.chunk.doc_id} ({h.score:.3f})" for h in top])

# %%
# Exercise 3: how close to the best score a reading must be
margin = 0.25
print({k: round(v, 3) for k, v in
       readings_summary(readings_report(qs, hits, catalog, margin=margin)).items()})

# %% tags=["answers"] jupyter={"source_hidden": true, "outputs_hidden": true}
# Answers (expand to read): each exercise with the value it suggests, beside the default.
keep_counts = {}  # include_superseded -> (fixed, broken); the closing reads it
for keep in (False, True):
    def read_keep(q, keep=keep):
        return catalog.filter(**catalog.read_question(q.text).describe(), include_superseded=keep)
    v = run_experiment(bench, chunker, embedder, k=5, chunks=chunks, where=read_keep,
                       label=f"{chunker.label} · self-query, include_superseded={keep}")
    fl = filter_flips(filtered, catalog, outcomes["dense", "no filter"], v, read=read_keep)
    keep_counts[keep] = int((fl.change == "fixed").sum()), int((fl.change == "broken").sum())
    print(f"1. include_superseded={keep}: fixes {keep_counts[keep][0]}, breaks "
          f"{keep_counts[keep][1]}; pass@5 against no filter (dense) "
          f"{diff_ci(versus(v.values(PASS), outcomes['dense', 'no filter'].values(PASS)))}")
for text in ("In 2022, how much did the Priority support add-on cost?",
             "How much did Priority support cost in the 2022 fee schedule?"):
    print(f"2. {text!r} reads: {catalog.read_question(text).describe() or 'no filter'}")
loose = {}
for m in (0.25, 0.5):
    loose[m] = r = readings_summary(readings_report(qs, hits, catalog, margin=m))
    print(f"3. margin {m}: ambiguous flagged {flagged(r, 'ambiguous')}, unambiguous wrongly "
          f"flagged {flagged(r, 'unambiguous')}")
moved = 100 * (loose[0.5]["ambiguous_flagged"] - loose[0.25]["ambiguous_flagged"])
more = 100 * (loose[0.5]["unambiguous_flagged"] - loose[0.25]["unambiguous_flagged"])
print("   the looser margin " + (f"flags {moved:+.1f} points more of the ambiguous questions"
                                 if moved else "flags no more of the ambiguous questions")
      + f" and {more:+.1f} points more of the unambiguous ones")

# %%
print(rec.save())

# %%
from ragkit.experiments.prune import verdict
from ragkit.report import Decision, ci, pct, ranked_closing

dense_sq = comparisons["dense", "self-query"]
f = flips["dense"]
fixed, broken = int((f.change == "fixed").sum()), int((f.change == "broken").sum())
no_filter = outcomes["dense", "no filter"].means[PASS]
chroma_c = versus(chroma_out["oracle corpus"].values(PASS), chroma_out["no filter"].values(PASS))
dense_sq_span = compare("dense", "self-query", metric="recall")  # span recall@5
untuned = "all questions, nothing here is tuned"
decisions = [  # an oracle filter (the question's own corpus) is a finding, never a call
    Decision("a self-query filter read from the question", "no filter", "pass@5",
             {"course, dense": comparisons["dense", "self-query"],
              "course, BM25": comparisons["bm25", "self-query"]},
             "all questions that need a filter, nothing here is tuned",
             f"{embedder.name} / BM25", over="first stage"),
    # each prune rule alone, on the questions it can serve; the metadata rule deletes the gold
    # of the questions about superseded documents by design, so that loss is its note
    Decision(f"pruning superseded documents (the metadata rule alone; index: course {big})",
             "the unpruned index", B,
             {"questions whose gold is in current documents": rule_vs["superseded"]},
             untuned, embedder.name, over="question group",
             note=f"it drops {each_rule['superseded'][1]} chunks; by design it deletes the gold "
                  f"of the {old_vs.n} questions about superseded documents, "
                  f"{diff_ci(old_vs)} on those, so it suits only a system where no one asks "
                  "about an old version"),
    Decision(f"dropping chunks that look like flattened tables (alone; index: course {big})",
             "the unpruned index", B, {"all course questions": rule_vs["garbled or empty"]},
             untuned, embedder.name, over="question group",
             note=f"it drops {each_rule['garbled or empty'][1]} chunks, of which the garbled "
                  f"copy has {flat_copy}; the rest are chunks of other documents it also reads as "
                  "flattened tables"),
    *([Decision(f"dropping duplicate chunks (alone; index: course {big})",
                "the unpruned index", B, {"all course questions": rule_vs["duplicate"]},
                untuned, embedder.name, over="question group",
                note=f"it drops {each_rule['duplicate'][1]} chunks")]
      if each_rule["duplicate"][1] else []),  # a rule that drops nothing is not a decision
]
display(Markdown(ranked_closing(decisions, [
    f"Without any filter, dense search already finds {pct(no_filter)} of the gold units in the "
    f"top 5 on the {len(filtered)} questions that need a filter"
    + (", so there is little left for a filter to win on this corpus." if no_filter >= 0.9
       else "."),
    finding(dense_sq, "self-query", "no filter", "pass@5 (dense)"),
    f"The whole self-query effect is {len(f)} questions: it fixes {fixed} and breaks {broken}"
    f" (net {fixed - broken:+d} of {len(filtered)}); in {int((~f['gold kept']).sum())} of them "
    "the filter read excludes the gold document.",
    finding(comparisons["dense", "oracle"], "oracle", "no filter", "pass@5 (dense)")
    + " The oracle filter is the most a filter can give here.",
    finding(comparisons["bm25", "self-query"], "self-query", "no filter", "pass@5 (BM25)"),
    "Seed 000's \"cheapest recall win\", read on pass@5 and on span recall@5 (dense): "
    + "; ".join(f"on {name} the self-query filter " + (
        "measurably raises it" if c.low > 0 else "measurably lowers it" if c.high < 0 else
        "shows no measurable difference") + f" ({100 * c.diff:+.1f} points {ci(c.low, c.high)})"
        for name, c in (("pass@5", dense_sq), ("span recall@5", dense_sq_span))) + ".",
    "Self-query reading: " + reading[:1].lower() + reading[1:],
    f"With `include_superseded=True` (superseded documents kept when the rules read no year) "
    f"the self-query filter fixes {keep_counts[True][0]} and breaks {keep_counts[True][1]}, "
    f"against {keep_counts[False][0]} and {keep_counts[False][1]} by default: "
    + (f"the default's exclusion of superseded documents causes "
       f"{keep_counts[False][1] - keep_counts[True][1]} of its {keep_counts[False][1]} breaks."
       if keep_counts[False][1] > keep_counts[True][1] else
       "the default's exclusion of superseded documents causes none of its breaks."),
    f"Readings: {pct(readings['ambiguous_flagged'])} of {readings['n_ambiguous']:.0f} "
    f"ambiguous questions flagged, naming {pct(readings['ambiguous_gold_docs_named'])} of their "
    f"gold documents; {pct(readings['unambiguous_flagged'])} of "
    f"{readings['n_unambiguous']:.0f} unambiguous lookups wrongly flagged.",
    finding(chroma_c, "oracle corpus", "no filter",
            "pass@5 (Chroma, searching the question's own corpus)"),
    *pruning_findings,
    "Each prune rule alone at the largest size: " + "; ".join(
        f"{r}: {each_rule[r][1]} chunks dropped, {B} {diff_ci(c)} (n = {c.n})"
        for r, c in rule_vs.items()) + "."
    + (" The duplicate rule drops no chunk of this index, so it is not judged here."
       if not each_rule["duplicate"][1] else ""),
    "Seed 002's \"more documents do not monotonically improve retrieval\": "
    + {"held": f"held here; the largest index measurably lowers {B}.",
       "not held": f"not held here; the largest index measurably raises {B}.",
       "no measurable difference": f"no measurable difference in {B} here between the largest "
       "index and the course alone."}[verdict(grew)]
    + (f" Pruning measurably gives {B} back on the questions it can serve."
       if gave_back_current.low > 0 else
       f" Pruning measurably lowers {B} even on the questions it can serve."
       if gave_back_current.high < 0 else
       f" Pruning gives no measurable {B} back on the questions it can serve."),
])))
