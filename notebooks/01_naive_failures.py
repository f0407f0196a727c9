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
# # 01 · Naive chunking and how it fails
#
# Terms: every metric, word and seed essay, defined once: [glossary](../docs/glossary.md).
#
# As seed 001 puts it, "Fixed 1000-character windows chop mid-sentence, split tables from their
# headers, and orphan pronouns from their antecedents." Seed 000 tells the same story about a fee
# table whose Gold row loses its column names. This notebook asks: **does the splitter every
# tutorial starts with fail in those ways on a corpus built to stage them, and which naive
# splitter sets the bar, on public benchmarks, that every later notebook is measured against?**
# It measures that before trying anything smarter. Two ideas run
# through the whole course:
#
# 1. **Gold is a character span.** Each question in the golden set points at the exact characters
#    of a document that answer it. Any chunker can then be scored by how much of that span its
#    retrieved chunks cover (recall), how much of what it retrieved is gold (precision), and the
#    two combined (IoU) — the metrics of Chroma's chunking report.
# 2. **Measure retrieval before touching the model.** If the right text never reaches the model,
#    no prompt can save the answer.

# %%
from IPython.display import Markdown, display

from ragkit.config import get_settings, seed_everything
from ragkit.report import pct, percent_frame, percent_table, quiet_cells

quiet_cells()  # each cell's warnings as one line per kind
seed_everything()
settings = get_settings()
print(f"profile: {settings.profile}")

# %% [markdown]
# ## The course corpus and its golden set
# The corpus describes a fictional company, Northwind Cloud: policies with fee tables, a
# contract, investment memos, an API reference, earnings calls, a paper, chat threads and a few
# source files. Some of it was written to stage the failures that practitioners report.

# %%
import pandas as pd
from ragkit.evaluate import load_course

course_full = load_course()
course = course_full.for_profile()
questions = pd.DataFrame([{"id": q.id, "type": q.type, "gold spans": len(q.gold),
                           "needs filter": bool(q.context)} for q in course_full.queries])
display(Markdown(
    f"**{len(course_full.documents)} documents**, "
    f"{sum(len(d.text) for d in course_full.documents):,} characters; "
    f"**{len(questions)} questions**"
    + (f" (this smoke run uses {len(course.documents)} documents)" if settings.smoke else "")))
questions.groupby("type").agg(questions=("id", "count"), with_filter=("needs filter", "sum"))

# %% [markdown]
# ## The naive splitters
# `FixedCharChunker(1000, 200)` is the splitter most tutorials start with: windows of `1000`
# characters, each starting `800` characters after the last. `FixedCharChunker(250, 0)` is the
# small variant. Neither looks at what it cuts.

# %%
from ragkit.chunkers import FixedCharChunker
from ragkit.embed import Embedder
from ragkit.experiments import run_experiment

embedder = Embedder()
naive = FixedCharChunker(1000, 200)
small = FixedCharChunker(250, 0)
K = 3  # the failure stories look at the top 3, as a chat answer usually does
dense = {c.label: run_experiment(course, c, embedder, k=K) for c in (naive, small)}
tfidf = {c.label: run_experiment(course, c, k=K, retriever="tfidf") for c in (naive, small)}

# %% [markdown]
# ## The staged failures, one by one
# For each case: the question and the answer we expect; why the case was staged (its
# explanation in `data/golden/staged_failures.json`); every chunk the splitter cut around each
# gold span, whole, with its boundaries and the gold in bold red; and what the dense embedder and
# TF-IDF returned in their top `K`, in full, the gold between ⟦ ⟧. Read the chunks the way the
# model would: without the rest of the document. The first case is shown here; every case is
# written to one page (its path is printed below), and the table after it sums them up.

# %%
import json

from ragkit.report import (chunk_view, clip_lines, hits_text, holding_rank, outranked,
                           save_page, staged_case_html)
from ragkit.report.pdf_lesson import header_row, table_cuts

staged = json.loads((settings.data_dir / "golden" / "staged_failures.json").read_text())
by_id = {q.id: q for q in course.queries}
docs = course.docs_by_id()
# 250-character windows are the ones that cut the sentence in case 6 and the caveat in case 8
splitter_for = {"sentence_cut_by_small_splitter": small, "caveat_in_next_sentence": small}
staged = [c for c in staged if c["question_id"] in by_id]
pages = []
for case in staged:
    q, chunker = by_id[case["question_id"]], splitter_for.get(case["name"], naive)
    runs = {f"dense {embedder.name}": dense[chunker.label].hits[q.id],
            "TF-IDF": tfidf[chunker.label].hits[q.id]}
    pages.append(staged_case_html(case, q, docs, dense[chunker.label].chunks, runs, k=K,
                                  splitter=chunker.label))
first = staged[0]  # the first case on screen, each hit clipped to its gold lines
q, chunker = by_id[first["question_id"]], splitter_for.get(first["name"], naive)
print(f"{first['name']} · {q.id}: {q.text}\nexpected: {q.answer}\nsplitter: {chunker.label}")
for g in q.gold:
    print(f"gold, {g.doc_id} [{g.start}:{g.end}]: {docs[g.doc_id].text[g.start:g.end]!r}")
    where = {name: holding_rank(out[chunker.label].hits[q.id], g)
             for name, out in ((f"dense {embedder.name}", dense), ("TF-IDF", tfidf))}
    print("the chunks the splitter cut around it (each one's first line says where it is; "
          "the rank each retriever gives the chunk holding it: "
          + ", ".join(f"{n} {r if r else 'none'}" for n, r in where.items()) + "):")
    print(clip_lines(chunk_view(docs[g.doc_id], dense[chunker.label].chunks, g, fmt="text"), 8,
                     focus=r"^── ")[0])
    cut = table_cuts(docs[g.doc_id], g, [chunker])[0]
    if header_row(docs[g.doc_id], g):  # a table row: does its header reach the model with it?
        print(f"the table's header row ({header_row(docs[g.doc_id], g)[:60]}…) is "
              + ("in the chunk that holds the gold row." if cut["header with it"] else
                 "not in the chunk that holds the gold row: that chunk starts below it, so the "
                 "row reaches the model without its column names."))
for name, out in ((f"dense {embedder.name}", dense), ("TF-IDF", tfidf)):
    print(f"══ {name}, top {K}:\n" + hits_text(q, out[chunker.label].hits[q.id], k=K, lines=2))
print(outranked(q, dense[chunker.label].hits[q.id], k=K))  # why the gold's chunk ranks low
print(f"all {len(pages)} cases, each in full (why each was staged, every chunk around the gold, "
      f"every hit whole): {save_page(pages, '01_staged_cases')}")

# %% [markdown]
# ## What went wrong, in one table
# A verdict computed from the spans for each retriever: `split` (no chunk holds the whole gold),
# `missed` (nothing in the top `K` touches it), `partial` (the top `K` hold part of it) or `ok`.
# `gold_pieces` is the number of pieces the gold span was cut into: the fewest chunks that
# together cover it (`ragkit.report.explain.gold_pieces`), so a span that sits whole in one chunk is
# one piece even when an overlapping neighbour also touches it. The status column says
# whether the naive dense retriever fails the case, and whether keyword retrieval (TF-IDF) on the
# same chunks gets the whole evidence where it fails; the fixes come in notebooks 02–06.

# %%
import pandas as pd

from ragkit.report import diagnose, staged_status



def header_with_row(q, chunker):
    """For gold that is a table row: whether the chunk holding it also holds the header row
    ("yes" / "no"); "–" for gold that is not a table row."""
    for g in q.gold:
        if header_row(docs[g.doc_id], g):
            return "yes" if table_cuts(docs[g.doc_id], g, [chunker])[0]["header with it"] else "no"
    return "–"


rows = []
for case in staged:
    q, chunker = by_id[case["question_id"]], splitter_for.get(case["name"], naive)
    out_d, out_t = dense[chunker.label], tfidf[chunker.label]
    rows.append({"case": case["name"], "question": q.id, "splitter": chunker.label,
                 **diagnose(q, out_d.chunks, out_d.hits[q.id], K),
                 "header with row": header_with_row(q, chunker),
                 "tfidf": diagnose(q, out_t.chunks, out_t.hits[q.id], K)["verdict"]})
verdicts = pd.DataFrame(rows)
status = pd.DataFrame(staged_status({r.case: {"dense": r.verdict, "TF-IDF": r.tfidf}
                                     for r in verdicts.itertuples()}, naive="dense"))
verdicts["status"] = status.status.str.replace("not fixed", "fails naively, TF-IDF too")
verdicts["status"] = verdicts.status.str.replace("fixed by TF-IDF", "fails naively; TF-IDF ok")
percent_table(verdicts[["case", "question", "splitter", "gold_pieces", "gold_in_one_chunk",
                        "header with row", "first_relevant_rank", "top_k_coverage", "verdict",
                        "tfidf", "status"]],
              shares=["top_k_coverage"], counts=["first_relevant_rank"])

# %%
failed = verdicts[verdicts.verdict != "ok"]
cut = int((~failed.gold_in_one_chunk).sum())
headless = failed[failed.gold_in_one_chunk & (failed["header with row"] == "no")]
display(Markdown(
    f"With the naive splitters, **{len(failed)} of {len(verdicts)}** staged questions do not get "
    f"their whole evidence into the dense top {K}"
    + (f"; in {cut} of those the gold itself was cut into more than one chunk, so no single "
       "chunk carries it and only retrieving every piece brings it back" if cut else "; in none of those was the gold itself cut")
    + (f"; in the other {len(failed) - cut} every gold span sat whole in some chunk, and "
       f"retrieval did not bring all of them into the top {K}" if len(failed) > cut else "")
    + (f" ({len(headless)} of those is a table row whose chunk lacks the table's header row "
       f"({', '.join(headless.case)}): the gold is whole but arrives without its column names, "
       "the cut seed 000 describes, which a verdict on the gold span alone does not see)"
       if len(headless) else "")
    + ". " + (f"{len(verdicts) - len(failed)} staged case(s) do not fail here at all: "
              + ", ".join(verdicts[verdicts.verdict == "ok"].case) + "."
              if len(failed) < len(verdicts) else "")))
# the verdict reads coverage first: ok when the top K hold all the gold, however it was cut
for r in verdicts[(verdicts.verdict == "ok") & (verdicts.gold_pieces > 1)].itertuples():
    display(Markdown(
        f"{r.case} ({r.question}) is `ok` although its gold is cut into {r.gold_pieces} pieces: "
        f"the verdict is read in order (`ok` when the top {K} hold all of the gold, then `split`, "
        f"`missed`, `partial`), and here the top {K} hold {pct(r.top_k_coverage)} of it, every "
        f"piece retrieved (first at rank {r.first_relevant_rank})."))

# %% [markdown]
# ## Knowing when to say "not in the documents"
# Some golden questions have no answer in the corpus. A retriever can abstain when its best
# score is below a threshold. The threshold is chosen on the **tune** half of the questions and
# judged on the **held-out** half: the grouped split every bench of the course uses
# (`ragkit.evaluate.split_of`, committed in `results/splits.json`), where questions that share a
# document stay on one side, so the threshold never sees the questions it is judged on. On the
# held-out half we count how often an answerable question is refused (over-refusal) and how often
# an unanswerable one gets an unsupported answer.
#
# Choosing the threshold that maximises plain accuracy fails here: most questions are
# answerable, so "never refuse" is already accurate, and that is the threshold it picks. We
# maximise **balanced accuracy** instead (the mean of the answer rate on answerable questions and
# the refusal rate on the others), which gives both kinds of error the same weight; refusing at
# random scores one half. The held-out balanced accuracy comes with its 95 % interval (a
# bootstrap that resamples answerable and unanswerable questions apart), and the sentence under
# the cell says whether that interval lies above chance.

# %%
from ragkit.evaluate import refusal_scores
from ragkit.report import refusal_line

top_scores = {qid: (hits[0].score if hits else float("-inf"))
              for qid, hits in dense[naive.label].hits.items()}
n_refusal = sum(not q.gold for q in course.queries)
accuracy_only = refusal_scores(course.queries, top_scores)
refusal = refusal_scores(course.queries, top_scores, balanced=True)
if refusal:
    display(Markdown(
        f"{n_refusal} of {len(course.queries)} questions have no answer. Calibrated on the tune "
        f"half for plain accuracy, the threshold ({accuracy_only['refusal_threshold']:.3f}) "
        f"refuses {pct(accuracy_only['over_refusal'])} of the answerable held-out questions and "
        f"answers {pct(accuracy_only['unsupported_answer'])} of the unanswerable ones. "
        f"Calibrated for balanced accuracy, the threshold is a top score of "
        f"**{refusal['refusal_threshold']:.3f}**: it refuses **{pct(refusal['over_refusal'])}** of "
        f"the {refusal['n_answerable']} answerable held-out questions and still answers "
        f"**{pct(refusal['unsupported_answer'])}** of the {refusal['n_unanswerable']} "
        f"unanswerable ones.\n\n**{refusal_line(refusal)}**"))
    # the mechanism on one case: an unanswerable held-out question, its top hit and score
    from ragkit.evaluate import split_of
    unanswerable = [q for q in course.queries if not q.gold and split_of(q.id) == "held-out"]
    answered = [q for q in unanswerable if top_scores[q.id] >= refusal["refusal_threshold"]]
    for q in ([answered[0]] if answered else []) + [q for q in unanswerable
                                                     if q not in answered][:1]:
        h = dense[naive.label].hits[q.id][0]
        print(f"{q.id} (no answer in the corpus): {q.text}\n   top hit {h.chunk.doc_id} "
              f"[{h.chunk.start}:{h.chunk.end}], score {h.score:.3f} "
              + (">=" if h.score >= refusal["refusal_threshold"] else "<")
              + f" threshold {refusal['refusal_threshold']:.3f}: "
              + ("answered (unsupported)" if h.score >= refusal["refusal_threshold"]
                 else "refused") + f"\n   {' '.join(h.chunk.text.split())[:150]}…")
else:
    display(Markdown("This slice of the course has too few unanswerable questions on one of "
                     "its halves to choose and judge a threshold."))

# %% [markdown]
# ## The baseline table on all three benchmarks
# Five naive or near-naive strategies, scored on the course corpus, Chroma's five corpora (one
# index holding all of them, as the report does) and Anthropic's code files:
#
# - fixed characters, `FixedCharChunker(250, 0)` and `FixedCharChunker(1000, 200)`;
# - fixed tokens, `512/64`, counted with the embedder's own tokenizer and with cl100k_base (the
#   tokenizer of Chroma's report);
# - recursive splitting, `1000/200` characters with langchain's default separators — ragkit's
#   `RecursiveChunker` returns exactly the chunks of langchain's RecursiveCharacterTextSplitter
#   (a test checks it), with offsets carried instead of searched for.
#
# The first columns (`@B1024`) score the context a budget of `1024` cl100k tokens lets through,
# so big and small chunks are compared at the same cost; the fixed-k columns (`k = 5`) follow.
# The `flags` column matters: all-MiniLM-L6-v2 reads at most `256` tokens, so a `512`-token chunk
# is truncated before it is embedded. ragkit counts and reports that instead of hiding it.
#
# The table's columns, each in the glossary: `recall@B1024`, `pass@B1024` and `iou@B1024` read
# the budget's context (span recall, pass, IoU); `recall@k` is span recall in the top `k`,
# `pass@k` the share of gold units wholly inside the top `k`, `precision` and `iou` read the
# top `k` too; **precision_omega** is the best precision a chunking allows the question, as if
# every chunk touching the gold were retrieved (Chroma's precision_Ω); **mrr@k** is one over
# the rank of the first hit that touches the gold (nothing when none of the top `k` does);
# **ndcg@10** scores the order of the top ten by the share of new gold each hit adds.

# %%
from ragkit.chunkers import FixedTokenChunker, RecursiveChunker
from ragkit.evaluate import load
from ragkit.experiments import compare
from ragkit.report import Recorder

rec = Recorder("01_naive_failures")
benches = [course, load("chroma").for_profile(), load("anthropic").for_profile()]
baselines = [
    FixedCharChunker(250, 0),
    FixedCharChunker(1000, 200),
    FixedTokenChunker(512, 64, tokenizer="minilm"),
    FixedTokenChunker(512, 64, tokenizer="cl100k_base"),
    RecursiveChunker(1000, 200, tokenizer="chars", separators=["\n\n", "\n", " ", ""]),
]
table, outcomes = compare(benches, baselines, embedder, rec, k=5, experiment="baseline",
                          return_outcomes=True)
if refusal:
    rec.add_metrics(refusal, experiment="refusal", benchmark="course", strategy=naive.label,
                    embedder=embedder.name, k=K, n_queries=len(course.queries),
                    params={"criterion": "balanced accuracy",
                            "split": "grouped: chosen on tune, scored on held-out"})
percent_table(table, counts=["n_chunks"])

# %% [markdown]
# Which baseline has the most span recall at the `1024`-token budget, and how does the small
# window compare with the tutorial splitter on each benchmark? Each comparison is paired over
# the same questions, with a 95 % bootstrap interval (`ragkit.evaluate.versus`); the sentences
# below, direction included, are written from that interval.

# %%
from ragkit.evaluate import versus
from ragkit.report import finding

B = 1024


def against(bench, a, b, metric="recall"):
    """Paired finding of strategy a against b on one benchmark, at the budget B."""
    c = versus(outcomes[(bench, a)].values(metric, B), outcomes[(bench, b)].values(metric, B))
    return finding(c, a, b, f"span {metric} at {B:,} tokens ({bench})")


best = table.loc[table.groupby("benchmark")[f"recall@B{B}"].idxmax()]
small_vs_naive = [against(bench.name, small.label, naive.label) for bench in benches]
level = {r.benchmark: pct(r[f"recall@B{B}"]) for _, r in best.iterrows()}  # ties as printed
display(Markdown("Highest mean span recall at the budget per benchmark (a mean over all "
                 "questions, not a tested win; the closing pairs each with the tutorial "
                 "splitter): " + "; ".join(
    f"**{bench}**: " + " and ".join(table[(table.benchmark == bench) & (
        table[f"recall@B{B}"].map(pct) == shown)].strategy) + f" ({shown})"
    for bench, shown in level.items())
    + ".\n\n" + "\n".join(f"- {f}" for f in small_vs_naive)))

# %% [markdown]
# The closing below compares each strategy with the tutorial splitter on the **held-out** half
# only (the half no choice in the course is tuned on), so its numbers can differ from the
# table's, which reads all questions. Span recall at the budget on each half:

# %%
from ragkit.evaluate import split_of

halves = []
for bench in benches:
    for c in (naive, small, baselines[2], baselines[4]):
        v = outcomes[(bench.name, c.label)].values("recall", B).dropna()
        side = pd.Series([split_of(q) for q in v.index], index=v.index)
        halves.append({"benchmark": bench.name, "strategy": c.label, "all": v.mean(),
                       "tune half": v[side == "tune"].mean(),
                       "held-out half": v[side == "held-out"].mean()})
percent_frame(pd.DataFrame(halves))

# %% [markdown]
# Windows of `512` MiniLM tokens differ from the tutorial splitter's in two ways this notebook
# does not separate: MiniLM embeds only their first `256` tokens, and few of them fit in
# `1024` cl100k tokens. The next cell shows the second, and the same windows read at `k = 5`,
# where five whole windows are read whatever their size:

# %%
from ragkit.evaluate.budget import count_tokens

long_windows = []
for bench in benches:
    o_long = outcomes[(bench.name, baselines[2].label)]
    o_naive = outcomes[(bench.name, naive.label)]
    mean_tokens = {lbl: sum(count_tokens(ch.text) for ch in o.chunks) / len(o.chunks)
                   for lbl, o in ((baselines[2].label, o_long), (naive.label, o_naive))}
    at_k = versus(o_long.values("recall"), o_naive.values("recall"))
    long_windows.append(
        f"{bench.name}: a {baselines[2].label} chunk averages "
        f"{mean_tokens[baselines[2].label]:.0f} "
        f"cl100k tokens against {mean_tokens[naive.label]:.0f}, so about "
        f"{B / mean_tokens[baselines[2].label]:.1f} fit in {B:,} tokens against "
        f"{B / mean_tokens[naive.label]:.1f}; at k = 5, "
        + (lambda t: t[:1].lower() + t[1:])(
            finding(at_k, baselines[2].label, naive.label, "span recall@5")))
display(Markdown("\n".join(f"- {x}" for x in long_windows)))

# %% [markdown]
# ## Does our harness agree with the published numbers?
# Before trusting any comparison, check the ruler. Chroma's report lists recall and IoU for
# several splitters with all-MiniLM-L6-v2 and `k = 5`; Anthropic's cookbook lists Pass@5/10/20
# for its own chunks. `ragkit.experiments.reproductions` re-runs both (chunk sizes in cl100k tokens, as the
# report measured them) and puts our numbers beside theirs. In the smoke profile this runs on a
# slice and is not comparable; the full profile runs the whole benchmarks. Chroma's corpus
# holds some passages more than once; ragkit credits a retrieved copy of the gold's text
# (docs/glossary.md, identical text), Chroma's code only the anchored copy, so the two
# "anchored gold" columns score the same hits by upstream's rule. `prec_Ω` is precision_omega,
# defined with the baseline table.

# %%
from ragkit.experiments import anthropic_baseline, chroma_repro

repro = chroma_repro(smoke=settings.smoke)
repro_df = pd.DataFrame(repro, columns=["chunker", "recall", "published recall", "Δ recall",
                                        "IoU", "published IoU", "Δ IoU", "precision",
                                        "precision_Ω", "recall, anchored gold",
                                        "IoU, anchored gold", "chunks", "flags", "time"])
# chroma_repro printed its table above; repro_df keeps the same rows for the code below

# %% [markdown]
# Agreement is decided by a rule fixed before the run (`ragkit.report.claims.decide`, for a
# published level): **held** when our mean lies within the tolerance of the published value,
# `10 %` of that value (for IoU values of a few percent, a few tenths of a point, not the
# three points that would let almost any configuration pass); **consistent, not shown** when
# it does not but our 95 % bootstrap interval contains the published value; **not held**
# otherwise. The interval decides only between the last two. Of the last three columns below,
# two are the distance and the tolerance each verdict reads; the third says whether the
# published value lies inside our 95 % interval, a stricter reading that decides nothing.

# %%
from ragkit.report import check_claims, claims_for, load_results, load_scores, show

from ragkit.report.claims import TOLERANCE

checked = check_claims(load_results(), load_scores(), claims=claims_for("chroma"))
claims = show(checked)
inside = [lo <= c <= hi for lo, hi, c in zip(checked.low, checked.high, checked.claimed)]
display(claims.assign(**{"|ours − claimed|": [f"{100 * abs(o - c):.2f}" for o, c in
                                             zip(checked.ours, checked.claimed)],
                         f"tolerance ({TOLERANCE:.0%})": [f"{100 * TOLERANCE * abs(c):.2f}"
                                                         for c in checked.claimed],
                         "published in our 95 % CI": ["yes" if x else "no" for x in inside]}
                      ).drop(columns=["source", "subset", "baseline", "reason"]))
# the stricter reading, and what the misses are not
strict = {m: [x for x, mm in zip(inside, checked.metric) if mm == m] for m in ("recall", "iou")}
wide = 100 * TOLERANCE * checked.claimed[checked.metric == "recall"]
missed = checked[checked.verdict == "not held"]
token_rows = repro_df[repro_df.chunker.str.startswith("token")]
copies_effect = (token_rows["IoU"] - token_rows["IoU, anchored gold"]).abs().max()  # points
misses_alike = (len(missed) and set(missed.metric) == {"iou"}
                and missed.claim.str.startswith("fixed_tokens").all()
                and (missed.ours > missed.claimed).all())
display(Markdown(
    f"A tolerance of a tenth is wide for recall ({wide.min():.1f} to {wide.max():.1f} points). "
    "The stricter reading is the last column: the published value lies inside our 95 % "
    "interval for " + " and ".join(f"{sum(v)} of {len(v)} {m} values"
                                   for m, v in strict.items()) + ". "
    + (f"The {len(missed)} values outside the tolerance are all IoU of fixed-token splitters, "
       f"ours higher than published by {100 * (missed.ours - missed.claimed).min():.2f} to "
       f"{100 * (missed.ours - missed.claimed).max():.2f} points. Scored by Chroma's own rule "
       "(anchored gold only, the reproduction's last columns), the token splitters' IoU moves "
       f"by at most {copies_effect:.1f} point, so crediting identical copies is not the "
       "cause; this notebook does not find it." if misses_alike else "")))

# %%
anthropic_rows = pd.DataFrame(anthropic_baseline(smoke=settings.smoke),
                              columns=["run", "Pass@5", "Pass@10", "Pass@20"])
# anthropic_baseline printed its table above; anthropic_rows keeps the same rows
upstream_pass5 = float(anthropic_rows.iloc[0]["Pass@5"])

# %% [markdown]
# all-MiniLM-L6-v2 is a much smaller model than voyage-2; its Pass@5 on upstream's own chunks
# is the reference later notebooks compare with. It is not the pass@k column of the baseline
# table on Anthropic's benchmark: there a gold unit is one of upstream's chunks, and it counts
# only when the top `k = 5` of *our* chunker hold all of its characters. The next cell counts,
# per baseline, how many gold units even sit whole in one of its chunks:

# %%
anth = next(b for b in benches if b.name == "anthropic")
units = [g for q in anth.queries for g in q.gold]
unit_chars = pd.Series([g.end - g.start for g in units])
fit = []
for c in baselines:
    by_doc = {}
    for ch in outcomes[("anthropic", c.label)].chunks:
        by_doc.setdefault(ch.doc_id, []).append(ch)
    whole = sum(any(ch.start <= g.start and g.end <= ch.end for ch in by_doc.get(g.doc_id, []))
                for g in units)
    out_c = outcomes[("anthropic", c.label)]
    one = [sum(holding_rank(out_c.hits[q.id][:5], g) is not None for g in q.gold)
           / len(q.gold) for q in anth.queries if q.gold and q.id in out_c.hits]
    fit.append({"strategy": c.label, "gold units whole in one chunk": whole / len(units),
                "pass@5": out_c.means["pass@k"],
                "pass@5, one chunk holding the unit": sum(one) / len(one)})
print(f"{len(units)} gold units (upstream's chunks), median {unit_chars.median():,.0f} "
      "characters; "
      f"upstream's own chunks hold every unit whole: Pass@5 {upstream_pass5:.1f} %")
percent_frame(pd.DataFrame(fit))

# %% [markdown]
# pass@5 counts a gold unit when the top five chunks *together* hold all of its characters,
# so a unit the splitter cut in two still counts when both pieces are retrieved. The last
# column asks one chunk of the top five to hold the whole unit; where pass@5 is above it, the
# difference is units whose pieces were retrieved together, and where few units fit in one
# chunk (the first column), that is most of pass@5.

# %% [markdown]
# Everything above is saved as rows:

# %%
print(rec.save())

# %% [markdown]
# ## Exercises
# Each exercise is one cell that runs as written; change the value and run it again.
#
# 1. **Move the small window.** Give the small splitter an overlap (try `50`) or another size and
#    look at the two cases it was staged for: does the gold still fall across a boundary
#    (`gold_in_one_chunk`)? The cell only chunks, so it costs nothing.
# 2. **Ask your own question.** Put a question in `my_question` (try seed 000's "how long do Gold
#    customers have to request a refund") and read what the naive index returns in its top `K`.
#    Does any chunk hold the Gold row and the column names together?
# 3. **Refuse by accuracy.** Set `balanced = False` to calibrate the refusal threshold for plain
#    accuracy and compare the over-refusal and unsupported-answer rates with the balanced ones.

# %%
window = FixedCharChunker(250, 50)  # exercise 1: try other sizes and overlaps
for name in ("sentence_cut_by_small_splitter", "caveat_in_next_sentence"):
    case = next((c for c in staged if c["name"] == name), None)
    if case:
        q = by_id[case["question_id"]]
        cs = window.chunk(docs[q.gold[0].doc_id])
        print(f"{name}: gold in one chunk = {diagnose(q, cs, [], K)['gold_in_one_chunk']}")

# %%
from ragkit.report import clip_lines
from ragkit.retrieve import make_retriever

my_question = "How long do Gold customers have to request a refund?"  # exercise 2
index = make_retriever(dense[naive.label].chunks, embedder)  # vectors come from the cache
for rank, hit in enumerate(index.search([my_question], K)[0], 1):
    # each chunk's lines that name Gold or a table's column names, and their neighbours
    body, shown, total = clip_lines(hit.chunk.text, 8, focus=r"Gold|^\| *(Plan|Tier) *\|")
    print(f"── #{rank} {hit.chunk.doc_id} · score {hit.score:.3f} · {shown} of {total} lines"
          f"\n{body}")

# %% tags=["answers"] jupyter={"source_hidden": true, "outputs_hidden": true}
# Answers to exercises 1 and 2 (expand to read), run with the values they suggest.
for overlap in (0, 50, 100):
    whole = {c["name"]: diagnose(by_id[c["question_id"]], FixedCharChunker(250, overlap).chunk(
        docs[by_id[c["question_id"]].gold[0].doc_id]), [], K)["gold_in_one_chunk"]
        for c in staged if c["name"] in ("sentence_cut_by_small_splitter",
                                         "caveat_in_next_sentence")}
    print(f"1. 250/{overlap}: gold in one chunk: {whole}")
top = index.search([my_question], K)[0]
meta = {d.id: d.metadata for d in course.documents}
both = [f"#{r} {h.chunk.doc_id} ("
        + ("superseded: its row is the old answer" if meta[h.chunk.doc_id].get("superseded_by")
           else "current") + ")"
        for r, h in enumerate(top, 1) if "Gold" in h.chunk.text and "|---" in h.chunk.text]
print(f"2. Of the top {K}, the chunks holding a Gold row together with the table's header "
      f"row: {', '.join(both) or 'none'}")

# %%
balanced = True  # exercise 3: False calibrates for plain accuracy
r = refusal_scores(course.queries, top_scores, balanced=balanced)
print({m: round(v, 3) for m, v in r.items()} if r else "too few unanswerable questions")

# %%
from ragkit.experiments import decide
from ragkit.report import ranked_closing

tutorial = f"the tutorial splitter ({naive.label})"
decisions = [d for d in (
    decide.against(outcomes, small.label, naive.label, budget=B, alternative=tutorial,
                   technique=f"the small window without overlap ({small.label}: size and "
                             "overlap both differ from the tutorial splitter's, so this is the "
                             "pair, not size alone)"),
    decide.against(outcomes, baselines[2].label, naive.label, budget=B, alternative=tutorial,
                   technique=f"512-token windows, longer than MiniLM reads and fewer per "
                             f"budget ({baselines[2].label})"),
    decide.against(outcomes, baselines[4].label, naive.label, budget=B, alternative=tutorial,
                   technique=f"the recursive splitter ({baselines[4].label})"),
) if d]
held = claims[claims.verdict == "held"]
upstream = anthropic_rows.iloc[0]
better = [d for d in decisions if d.call == "use"]  # a naive splitter that beats the tutorial's
calls = "; ".join(f"{d.technique.split(' (')[0]}: {d.call} ({d.call_phrase()})" for d in decisions)
display(Markdown(
    f"**The opening question, answered:** the fixed windows fail {len(failed)} of the "
    f"{len(verdicts)} staged cases at the dense top {K}, and the gold is cut across chunks in "
    f"{cut} of those failures: most failures here are rankings, not cuts. Against "
    f"{tutorial} at {B:,} tokens: {calls}. "
    + (f"{better[0].technique} beats it everywhere, so it sets the bar."
       if better else
       f"No naive splitter measured here beats it on every benchmark, so {tutorial} sets the "
       "bar; the later notebooks set ragkit's chunkers against it and against every other "
       "simple baseline, the best of them picked on the tune half.")))
display(Markdown(ranked_closing(decisions, [
    f"On the staged cases, the naive splitters leave **{len(failed)} of {len(verdicts)}** "
    f"questions without their whole evidence in the dense top {K}; the gold was cut across "
    f"chunks in {cut} of those failures; in the other {len(failed) - cut}, every gold span sat "
    f"whole in some chunk and retrieval did not bring them all into the top {K}"
    + (f", and in {len(headless)} of them the chunk holding a table row lacks its header row"
       if len(headless) else "") + ". "
    + (f"Cases that do not fail naively: {', '.join(verdicts[verdicts.verdict == 'ok'].case)}."
       if len(failed) < len(verdicts) else ""),
    (f"Calibrated for balanced accuracy on the tune half (threshold "
     f"{refusal['refusal_threshold']:.3f}), the naive retriever refuses "
     f"{pct(refusal['over_refusal'])} of {refusal['n_answerable']} answerable held-out questions "
     f"and still answers {pct(refusal['unsupported_answer'])} of {refusal['n_unanswerable']} "
     f"unanswerable ones; calibrated for plain accuracy it refuses "
     f"{pct(accuracy_only['over_refusal'])} of the answerable ones and answers "
     f"{pct(accuracy_only['unsupported_answer'])} of the unanswerable ones. "
     + refusal_line(refusal) if refusal else ""),
    *small_vs_naive,
    f"Our harness reproduces {len(held)} of {len(claims)} of Chroma's published MiniLM values "
    "within the pre-registered tolerance"
    + (" (smoke slice: not comparable)." if settings.smoke else "."),
    f"Anthropic's benchmark, {upstream['run']}: Pass@5 {upstream['Pass@5']:.1f} % on upstream's "
    "own chunks, the reference the later notebooks compare with; on this notebook's chunkers "
    f"pass@5 ranges {min(r['pass@5'] for r in fit):.1%} to {max(r['pass@5'] for r in fit):.1%}, "
    "since a gold unit counts only when the top 5 hold all of it.",
    "512-token windows: truncation and the few windows per budget are not separated here. "
    + " ".join(long_windows),
])))
