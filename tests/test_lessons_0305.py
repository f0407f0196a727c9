"""The helpers notebooks 03, 04 and 05 call: filter flips and readings (03), preamble samples,
preamble quality and paired contextual comparisons (04), naive-vs-late rows and their paired
table (05), and the claim sentences of the closing sections."""

import json

import numpy as np
import pandas as pd
import pytest

from conftest import refund_chunks, refund_doc
from ragkit.evaluate import Benchmark
from ragkit.experiments import Outcome
from ragkit.types import Document, Query, Span


def outcome(values: dict, metric: str = "pass@k") -> Outcome:
    per_query = pd.DataFrame({"query_id": list(values), "type": "lookup",
                              metric: list(values.values())})
    return Outcome("b", "s", [], {}, per_query, {metric: float(np.mean(list(values.values())))})


# --- 03: filters ----------------------------------------------------------------------------

def test_filter_flips_lists_fixed_then_broken_and_whether_the_gold_was_searched():
    from ragkit.retrieve import Catalog, filter_flips

    docs = [Document("policy-2022", "old", {"effective_date": "2022-01-01",
                                            "superseded_by": "policy-2024"}),
            Document("policy-2024", "new", {"effective_date": "2024-01-01"}),
            Document("fees-eu", "eu", {"region": "eu"})]
    catalog = Catalog(docs)
    qs = [Query("q1", "Under the 2022 policy, is X allowed?", (Span("policy-2022", 0, 3),),
                context={"as_of": "2023-01-01"}),
          Query("q2", "In the EU, what are the fees?", (Span("fees-eu", 0, 2),),
                context={"region": "eu"}),
          Query("q3", "What does the policy say?", (Span("policy-2024", 0, 3),))]
    before = outcome({"q1": 1.0, "q2": 0.0, "q3": 1.0})
    after = outcome({"q1": 0.0, "q2": 1.0, "q3": 1.0})
    flips = filter_flips(qs, catalog, before, after)
    assert list(flips.query_id) == ["q2", "q1"]          # fixed first, then broken
    assert list(flips.change) == ["fixed", "broken"]
    broken = flips.iloc[1]
    assert broken.read == {}                              # "Under the 2022" is not read
    assert not broken["gold kept"]                        # the superseded gold was excluded
    assert flips.iloc[0]["gold kept"] and flips.iloc[0].read == {"region": "eu"}
    assert broken.question == qs[0].text                  # the question in full


def test_filter_flips_is_empty_when_nothing_changes():
    from ragkit.retrieve import Catalog, filter_flips

    catalog = Catalog([Document("d", "text")])
    q = [Query("q1", "What?", (Span("d", 0, 2),))]
    flips = filter_flips(q, catalog, outcome({"q1": 1.0}), outcome({"q1": 1.0}))
    assert flips.empty and "change" in flips.columns


def test_readings_summary_splits_ambiguous_from_the_rest():
    from ragkit.retrieve import readings_summary

    report = pd.DataFrame({"type": ["ambiguous", "ambiguous", "lookup", "lookup"],
                           "flagged_ambiguous": [True, False, True, False],
                           "gold_docs_named": [1.0, 0.5, 1.0, 1.0]})
    s = readings_summary(report)
    assert s == {"ambiguous_flagged": 0.5, "ambiguous_gold_docs_named": 0.75,
                 "unambiguous_flagged": 0.5, "n_ambiguous": 2.0, "n_unambiguous": 2.0}


# --- 04: preambles and contextual comparisons ------------------------------------------------

def test_sample_indices_spread_evenly():
    from ragkit.contextualize.samples import _sample_indices

    assert _sample_indices(10, 3) == [0, 3, 6]
    assert _sample_indices(2, 5) == [0, 1]
    assert _sample_indices(0, 3) == []


def test_preamble_samples_show_each_generator_beside_the_chunk():
    from ragkit.contextualize import preamble_samples, samples_text

    doc = refund_doc()
    chunks = refund_chunks(doc)
    bench = Benchmark("refund", [doc], [])
    samples = preamble_samples(bench, chunks, ["structural"], n=2, width=20)
    assert list(samples.columns) == ["doc_id", "chars", "chunk", "structural"]
    assert len(samples) == 2
    assert all("Refund Policy" in p for p in samples.structural)  # the title, at least
    assert samples.chunk.iloc[0].endswith("…") and len(samples.chunk.iloc[0]) == 21
    text = samples_text(samples)
    assert text.count("── refund") == 2 and "structural:" in text


def test_preamble_quality_counts_flags_repeats_and_prompt_echoes(tmp_path, monkeypatch):
    from ragkit.contextualize import preamble_quality

    monkeypatch.setenv("RAGKIT_DATA_DIR", str(tmp_path))
    folder = tmp_path / "cache" / "preambles"
    folder.mkdir(parents=True)
    records = [{"preamble": "This chunk is a copy of the policy.", "flags": []},
               {"preamble": "This chunk is a copy of the policy.", "flags": []},
               {"preamble": "Refunds for annual Suite plans, 2024 policy.", "flags": ["window"]},
               {"preamble": "", "flags": ["empty"]}]
    (folder / "course-gemma.jsonl").write_text(
        "\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    q = preamble_quality("course", ["gemma", "smollm2", "structural"])
    assert list(q.generator) == ["gemma"]       # no smollm2 cache; structural has none
    row = q.iloc[0]
    assert row.preambles == 4
    assert row.flagged == 0.25                  # "window" alone is not a quality flag
    assert row.repeated == 0.5
    assert row["echoes the prompt"] == 0.5


def recorded(label: str, strategies: dict[str, dict[str, float]], metric: str = "pass@20"):
    rows = pd.DataFrame([{"experiment": f"contextual · {label}", "strategy": s, "run": f"r-{s}"}
                         for s in strategies])
    scores = pd.DataFrame([{"run": f"r-{s}", "query_id": q, "metric": metric, "value": v}
                           for s, vals in strategies.items() for q, v in vals.items()])
    return rows, scores


def test_contextual_comparison_pairs_a_stage_with_basic_on_the_same_questions():
    from ragkit.experiments import CONTEXT_STAGES, contextual_comparison

    stage = CONTEXT_STAGES[0]
    rows, scores = recorded("up", {
        "basic · up": {"a": 1.0, "b": 0.0, "c": 0.0, "d": np.nan},
        f"{stage} · structural · up": {"a": 1.0, "b": 1.0, "c": 0.0, "d": 1.0}})
    c = contextual_comparison(rows, scores, "up", stage, "structural")
    assert (c.n, c.wins, c.losses, c.ties) == (3, 1, 0, 2)   # NaN (no gold) left out
    assert c.diff == pytest.approx(1 / 3)
    with pytest.raises(KeyError):
        contextual_comparison(rows, scores, "up", stage, "gemma")


def test_contextual_comparison_across_chunkers():
    from ragkit.experiments import contextual_comparison

    r1, s1 = recorded("code", {"basic · code": {"a": 0.0, "b": 0.0}}, "pass@5")
    r2, s2 = recorded("up", {"basic · up": {"a": 1.0, "b": 0.0}}, "pass@5")
    c = contextual_comparison(pd.concat([r1, r2]), pd.concat([s1, s2]), "code", "basic",
                              against_label="up", metric="pass@5")
    assert c.diff == pytest.approx(-0.5) and c.losses == 1



def test_with_intervals_adds_each_rows_paired_difference_from_basic():
    """The column reads a recorded stage's paired difference from basic in points with its
    interval; the basic row, and a row whose run was not recorded, read '–'; a tag appended to
    the generator name is stripped before the run is looked up."""
    from ragkit.experiments import CONTEXT_STAGES
    from ragkit.experiments.contextual import with_intervals

    stage = CONTEXT_STAGES[0]
    frames = recorded("up", {"basic · up": {"a": 0.0, "b": 0.0, "c": 1.0, "d": 1.0},
                             f"{stage} · structural · up": {"a": 1.0, "b": 1.0, "c": 1.0,
                                                            "d": 1.0}})
    table = pd.DataFrame({"generator": ["none", "structural (router)", "gemma"],
                          "stage": ["basic", stage, stage]})
    column = with_intervals(table, frames, "up").iloc[:, -1].tolist()
    assert column[0] == "–" and column[2] == "–"
    assert column[1].startswith("+50.0 [")  # two of four questions gained a whole point

# --- 05: late chunking ------------------------------------------------------------------------

def test_windowed_documents_reads_the_flag():
    from ragkit.experiments import windowed_documents

    assert windowed_documents("late:prefix_ignored:1;late:windowed_docs:52") == 52
    assert windowed_documents("truncated:10") == 0
    assert windowed_documents("") == 0


def test_late_vs_naive_pairs_modes_per_benchmark_and_chunker():
    from ragkit.experiments import late_vs_naive

    def row(bench, mode, values):
        return {"benchmark": bench, "chunker": "c", "embedder": "e", "mode": mode,
                "per_query": pd.DataFrame({"query_id": ["a", "b", "c"], "ndcg@10": values})}

    rows = [row("x", "naive", [0.5, 0.5, 1.0]), row("x", "late", [1.0, 0.5, 1.0]),
            row("y", "naive", [1.0, 1.0, 1.0])]  # y has no late run: left out
    t = late_vs_naive(rows)
    assert list(t.benchmark) == ["x"]
    r = t.iloc[0]
    assert r["late − naive"] == pytest.approx(1 / 6) and (r.wins, r.losses, r.ties) == (1, 0, 2)
    assert r.comparison.n == 3


def test_naive_vs_late_gives_one_row_per_mode_on_the_same_spans(embedder):
    from ragkit.chunkers import FixedTokenChunker
    from ragkit.experiments import naive_vs_late
    from ragkit.report import Recorder

    doc = refund_doc()
    start = doc.text.index("Annual plans can")
    q = Query("q1", "How long do I have to cancel an annual plan?",
              (Span("refund", start, start + 40),))
    rec = Recorder("test_late")
    rows = naive_vs_late(Benchmark("refund", [doc], [q]), embedder,
                         FixedTokenChunker(32, 0, tokenizer="minilm"), k=2, recorder=rec)
    assert [r["mode"] for r in rows] == ["naive", "late"]
    assert all(r["documents"] == 1 and len(r["per_query"]) == 1 for r in rows)
    assert {row["experiment"] for row in rec.rows} == {"late"}


# --- closing sections: claim verdicts as sentences --------------------------------------------

def test_claim_sentences_render_verdicts_and_reasons():
    from ragkit.report import claim_sentences
    from ragkit.report.claims import CLAIMS

    reduction = next(c for c in CLAIMS if c.effect == "failure_reduction")
    nan = float("nan")
    table = pd.DataFrame([
        {"id": reduction.id, "source": "Anthropic", "claim": "cuts failures by 35 %",
         "metric": "pass@20", "verdict": "not held", "estimate": 0.041, "low": -0.078,
         "high": 0.148, "n": 248, "ours": 0.813, "baseline": 0.805, "reason": "",
         "role": "claim"},
        {"id": "x", "source": "Seed 002", "claim": "late helps", "metric": "precision@k",
         "verdict": "not measurable here", "estimate": nan, "low": nan, "high": nan, "n": 0,
         "ours": nan, "baseline": nan, "reason": "needs RAGKIT_GEMMA_DIR", "role": "claim"},
        {"id": "y", "source": "s", "claim": "sensitivity", "metric": "m",
         "verdict": "(sensitivity)", "estimate": 0.1, "low": 0.0, "high": 0.2, "n": 5,
         "ours": 0.5, "baseline": 0.4, "reason": "", "role": "sensitivity"}])
    first, second = claim_sentences(table)
    assert first.startswith('Anthropic, "cuts failures by 35 %": **not held**')
    assert "reduced by 4.1 % (95 % CI [-7.8, +14.8] %)" in first and "n = 248" in first
    assert "81.3 % against 80.5 %" in first
    assert second == 'Seed 002, "late helps": **not measurable here** (needs RAGKIT_GEMMA_DIR).'


def test_contextual_table_records_runs_that_contextual_comparison_reads(embedder):
    from ragkit.experiments import CONTEXT_STAGES, CONTROLS, contextual_comparison, contextual_table
    from ragkit.report import Recorder

    doc = refund_doc()
    chunks = refund_chunks(doc)
    start = doc.text.index("Monthly plans are")
    q = Query("q1", "Are monthly plans refunded?", (Span("refund", start, start + 30),))
    rec = Recorder("test_contextual")
    table = contextual_table(Benchmark("refund", [doc], [q]), chunks, ["structural"],
                             embedder=embedder, label="t", recorder=rec, tag="mine")
    assert list(table.stage) == ["basic", CONTROLS[0], *CONTEXT_STAGES[:2]]  # no rescoring
    assert list(table.generator) == ["none (mine)"] * 2 + ["structural (mine)"] * 2
    c = contextual_comparison(*rec.frames(), "t", CONTEXT_STAGES[0], "structural")
    assert c.n == 1


def test_flip_reason_tells_an_unread_date_from_a_lower_rank():
    from ragkit.retrieve import Catalog, flip_reason

    catalog = Catalog([Document("d", "text")])
    q = Query("q1", "Under the 2022 policy?", (Span("d", 0, 2),), context={"as_of": "2023-01-01"})
    unread = flip_reason(q, catalog.read_question(q.text), False, "broken")
    assert unread.startswith("Why it broke: the rules did not read the date")
    assert "ranked lower" in flip_reason(q, catalog.filter(as_of="2023-01-01"), True, "broken")
    assert flip_reason(q, catalog.filter(as_of="2023-01-01"), True, "fixed").startswith(
        "Why it was fixed")
