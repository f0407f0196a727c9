"""Notebook 10's package side: the sample filing, the table question per chunker, the board,
and page_hit@B in the metrics.

- the committed sample filing is what `ragkit.tools.sample_pdf` writes, byte for byte;
- on it, a window that holds a row far below its table's header hands the model no header,
  and the router (table rows with the header in their prefix) and the page chunker do;
- the board reads span recall, pass and page hit on one half, best recall first;
- page_hit@B is 1 exactly when the context holds text of an evidence page.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

pytest.importorskip("pypdfium2")

from ragkit.chunkers import FixedCharChunker, PageChunker, Router  # noqa: E402
from ragkit.evaluate.metrics import evaluate_retrieval  # noqa: E402
from ragkit.evaluate.runs import Run  # noqa: E402
from ragkit.evaluate.splits import SPLITS_FILE  # noqa: E402
from ragkit.report.pdf_lesson import board, header_row, table_cuts  # noqa: E402
from ragkit.text.documents import load_document  # noqa: E402
from ragkit.text.locate import locate  # noqa: E402
from ragkit.tools.sample_pdf import DEFAULT, write_sample_filing  # noqa: E402
from ragkit.types import Chunk, Document, Query, Span  # noqa: E402


def test_the_committed_sample_filing_is_what_the_script_writes(tmp_path):
    pytest.importorskip("reportlab")
    assert write_sample_filing(tmp_path / "x.pdf").read_bytes() == DEFAULT.read_bytes()


@pytest.fixture(scope="module")
def sample():
    return load_document(DEFAULT)


def _gold(doc, quote):
    (s, e), = locate(doc.text, quote)
    return Span(doc.id, s, e)


def test_a_row_far_below_its_header_loses_it_in_a_window_not_in_the_router(sample):
    gold = _gold(sample, "| Deferred revenue, non-current | 21.7 | 18.2 |")
    assert header_row(sample, gold) == "| (In millions) | December 31, 2023 | December 31, 2022 |"
    cuts = {c["chunker"]: c for c in table_cuts(
        sample, gold, [FixedCharChunker(250, 0), FixedCharChunker(1000, 200), PageChunker(),
                       Router()])}
    assert all(c["row whole"] for c in cuts.values())
    assert not cuts["fixed_chars(250/0)"]["header with it"]
    assert not cuts["fixed_chars(1000/200)"]["header with it"]
    assert cuts["pages"]["header with it"] and cuts["pages"]["pages"] == "3–3"
    router = cuts["router"]["_chunk"]
    assert cuts["router"]["header with it"] and header_row(sample, gold) in router.prefix
    assert router.text == "| Deferred revenue, non-current | 21.7 | 18.2 |"


def test_header_row_is_empty_outside_a_table(sample):
    assert header_row(sample, _gold(sample, "Operating income turned positive")) == ""


def test_the_board_reads_each_metric_on_one_half_best_first():
    split = json.loads(SPLITS_FILE.read_text())["course"]
    ids = split["held-out"][:4] + split["tune"][:4]

    class Cfg:
        def __init__(self, label, simple):
            self.label, self.simple = label, simple

    def run(label, recall, simple=False):
        scores = pd.DataFrame({"recall@B1024": recall, "pass@B1024": [0.0] * 8,
                               "page_hit@B1024": [1.0] * 8}, index=ids)
        return Run("course", label, scores, Cfg(label, simple))

    rows = board([run("a", [0.0] * 4 + [1.0] * 4), run("b", [1.0] * 4 + [0.0] * 4, True),
                  Run("other", "c", pd.DataFrame(), Cfg("c", True))], "course", 1024)
    assert [r["configuration"] for r in rows] == ["b", "a"]  # held-out half: b 1.0, a 0.0
    assert rows[0]["recall"] == 1.0 and rows[0]["n"] == 4 and rows[0]["baseline"]
    assert rows[1]["recall"] == 0.0 and rows[1]["page_hit"] == 1.0


def test_page_hit_is_one_when_the_context_holds_text_of_an_evidence_page():
    text = "Page one text here.\n\nPage two holds the answer.\n\nPage three."
    doc = Document("d", text)
    pages = {"d": [(0, 19, 1), (21, 47, 2), (49, 60, 3)]}
    q = Query("q", "?", (Span("d", 31, 47),))
    same_page = Chunk.make(doc, 21, 30, "t")  # page 2, not the gold
    other_page = Chunk.make(doc, 49, 60, "t")
    for hits, want in (([same_page], 1.0), ([other_page], 0.0)):
        df, _ = evaluate_retrieval([q], {"q": [(h, 1.0) for h in hits]}, [same_page, other_page],
                                   k=1, budgets=(1024,), pages=pages)
        assert df["page_hit@B1024"].tolist() == [want]
        assert df["recall@B1024"].tolist() == [0.0]
    df, _ = evaluate_retrieval([q], {"q": [(same_page, 1.0)]}, [same_page], k=1,
                               budgets=(1024,))
    assert "page_hit@B1024" not in df  # no pages, no page metric


def test_chunk_sizes_reads_each_configurations_chunks_from_the_rows():
    from ragkit.report.pdf_lesson import chunk_sizes

    rows = pd.DataFrame([
        {"notebook": "bench_design", "benchmark": "financebench", "strategy": "pages+dense",
         "metric": "n_chunks", "value": 40.0},
        {"notebook": "bench_design", "benchmark": "financebench", "strategy": "pages+dense",
         "metric": "mean_chunk_chars", "value": 3000.0},
        {"notebook": "bench_design", "benchmark": "financebench", "strategy": "pages+dense",
         "metric": "recall", "value": 0.5},
        {"notebook": "bench_design", "benchmark": "chroma", "strategy": "pages+dense",
         "metric": "n_chunks", "value": 9.0}])
    assert chunk_sizes(rows, "financebench") == {
        "pages+dense": {"n_chunks": 40.0, "mean_chunk_chars": 3000.0}}


def test_contrast_and_hit_text_show_one_question_from_saved_hits(sample):
    from ragkit.evaluate.copies import attach_copies
    from ragkit.report.pdf_lesson import contrast, hit_text

    split = json.loads(SPLITS_FILE.read_text())["course"]
    ids = split["held-out"][:3]

    class Cfg:
        label, simple = "x", False

    a = Run("course", "a", pd.DataFrame({"recall@B1024": [0.5, 1.0, 0.0]}, index=ids), Cfg())
    b = Run("course", "b", pd.DataFrame({"recall@B1024": [0.5, 0.2, 0.0]}, index=ids), Cfg())
    assert contrast(a, b, "recall@B1024") == ids[1]
    assert contrast(b, a, "recall@B1024") is None
    gold = _gold(sample, "| Deferred revenue, non-current | 21.7 | 18.2 |")
    q, = attach_copies([Query(ids[1], "?", (gold,))], [sample])
    hits = pd.DataFrame([{"run": "a", "query_id": q.id, "rank": 0, "doc_id": sample.id,
                          "start": gold.start - 10, "end": gold.end + 5}])
    text = hit_text(hits, "a", q, {sample.id: sample})
    head, body = text.split("\n", 1)
    assert "#1 northwind-annual-report-2023, page 3" in head and "holds gold" in head
    assert "⟦| Deferred revenue, non-current | 21.7 | 18.2 |⟧" in body
    assert "no hit at rank 2" in hit_text(hits, "a", q, {sample.id: sample}, rank=2)


def test_weak_pick_findings_name_a_difference_against_a_last_ranked_pick():
    from types import SimpleNamespace as NS

    from ragkit.report.pdf_lesson import weak_pick_findings

    def effect(rank):
        return NS(factor="chunker", verdict="beats", split_rank=(rank, 8),
                  split_leader=("pages", 0.269), budget=2048, treated=NS(label="router+stack"),
                  base=NS(chunker="recursive(1000/200,chars)"))

    said = weak_pick_findings([effect(8), effect(3)])
    assert len(said) == 1 and "last of 8 baselines" in said[0] and "26.9%" in said[0]


def test_zero_bounds_tells_an_exact_zero_from_a_small_number_rounded():
    from types import SimpleNamespace as NS

    from ragkit.report.pdf_lesson import zero_bounds

    def effect(low, wins=1, ties=11, losses=0):
        c = NS(low=low, high=0.2, wins=wins, ties=ties, losses=losses, n=wins + ties + losses)
        cfg = NS(label="router+dense", chunker="router", first_stage="dense", reranker="none",
                 simple=False)
        return NS(factor="chunker", benchmark="financebench", budget=1024, treated=cfg,
                  base=NS(label="pages+dense"), recall=c, pass_=NS(**{**vars(c), "low": 0.3}))

    said = zero_bounds([effect(0.0), effect(0.0004)])
    assert said.startswith("Of the bounds printed as +0.0 or -0.0 above, 1 are exactly 0")
    assert "recall@B low bound: +0.04 points" in said   # 0.0004 = 0.04 points, decimals shown
    assert "(11/12)^12 = 35% of them" in said and "only tied questions" in said
    assert zero_bounds([effect(0.05)]) == "No interval bound above rounds to 0.0."


def test_pass_reading_and_fiscal_year_note_read_their_inputs():
    from ragkit.report.pdf_lesson import fiscal_year_note, pass_reading

    rows = [{"configuration": "a", "pass": 0.0}, {"configuration": "b", "pass": 0.0}]
    said = pass_reading(rows, [100, 300, 2000], 1024)
    assert said.startswith("pass@B1024 is 0 for 2 of 2") and "median of 300" in said
    assert "1 of them longer than the whole budget" in said and "Above 0" not in said
    assert fiscal_year_note(Document("X_2023Q4", "Fiscal 2022 Results, no period"), "FY2023") == ""


def test_stack_reading_states_the_paired_first_stage_effect_on_one_chunker():
    from types import SimpleNamespace as NS

    from ragkit.report.pdf_lesson import stack_reading

    def effect(chunker, low, high, budget=1024):
        return NS(factor="first_stage", budget=budget,
                  treated=NS(chunker=chunker, first_stage="stack"),
                  base=NS(chunker=chunker, first_stage="dense"),
                  recall=NS(diff=(low + high) / 2, low=low, high=high, n=12))

    found = [effect("router", 0.01, 0.2), effect("pages", -0.25, 0.0),
             effect("pages", 0.05, 0.3, budget=2048)]
    said = stack_reading(found, "pages", 1024)
    assert "-12.5 points" in said and "[-25.0, +0.0]" in said and "n = 12" in said
    assert "no measurable difference" in said
    assert "measurable difference (stack ahead)" in stack_reading(found, "pages", 2048)
    assert stack_reading(found, "pages", 512) == ""


def test_board_place_gives_a_configurations_mean_and_rank():
    from ragkit.report.pdf_lesson import board_place

    rows = [{"configuration": "a+dense", "recall": 0.2}, {"configuration": "pages+dense",
                                                           "recall": 0.083}]
    assert board_place(rows, "pages+dense") == ("pages+dense has 8.3% span recall on the "
                                                "held-out half, 2 of 2 on the board")
    assert board_place(rows, "missing") == ""


def test_table_questions_finds_gold_on_pipe_table_lines_only():
    from types import SimpleNamespace

    from ragkit.report.pdf_lesson import table_questions

    text = "Intro line.\n\n| Item | 2023 |\n|---|---|\n| Revenue | 10 |\n\nProse after."
    doc = Document("d", text)
    row, prose = text.index("Revenue"), text.index("Prose")
    qs = [SimpleNamespace(id="row", gold=(Span("d", row, row + 7),)),
          SimpleNamespace(id="prose", gold=(Span("d", prose, prose + 5),)),
          SimpleNamespace(id="across", gold=(Span("d", 0, text.index("| Item") + 2),))]
    assert table_questions(qs, {"d": doc}) == ["row", "across"]
    assert table_questions(qs, {"d": doc}, ids={"prose", "across"}) == ["across"]


def test_window_pick_reads_the_tune_half_among_window_baselines_under_one_retrieval():
    from types import SimpleNamespace

    from ragkit.evaluate.runs import Metric
    from ragkit.report.pdf_lesson import window_pick

    def run(label, tune, held):
        values = {"tune": pd.Series(tune, dtype=float), "held-out": pd.Series(held, dtype=float)}
        return SimpleNamespace(benchmark="fb", config=SimpleNamespace(label=label, simple=True),
                               scores={Metric("recall", 1024).column: None},
                               values=lambda m, split: values[split])

    runs = [run("fixed_chars(250/0)+dense", [0.2, 0.4], [0.9, 0.9]),   # best held-out only
            run("recursive(1000/200,chars)+dense", [0.5, 0.5], [0.1, 0.1]),
            run("pages+dense", [0.9, 0.9], [0.9, 0.9]),                # not a window
            run("fixed_chars(1000/200)+stack", [0.9, 0.9], [0.9, 0.9])]  # other retrieval
    assert window_pick(runs, "fb", 1024) == "recursive(1000/200,chars)"
    assert window_pick(runs, "other", 1024) is None


def test_the_header_answer_changes_only_the_chunker():
    """Notebook 10's answer sets the router against the best simple baseline under the same
    first stage (never a configuration of another retrieval), one finding per first stage, and
    says 'no evidence either way' only when no pair differs measurably."""
    from types import SimpleNamespace as NS

    from ragkit.evaluate.stats import paired
    from ragkit.report.pdf_lesson import header_answer, header_pairs

    def cfg(chunker, first, simple=False):
        return NS(chunker=chunker, first_stage=first, reranker="none", simple=simple,
                  label=f"{chunker}+{first}")

    flat = paired([0.5, 0.6, 0.4, 0.5] * 5, [0.5, 0.5, 0.5, 0.5] * 5)
    up = paired([1.0] * 20, [0.0] * 20)

    def effect(first, base, c, budget=1024, bench="financebench"):
        return NS(benchmark=bench, factor="chunker", budget=budget, complete=True,
                  treated=cfg("router", first), base=cfg(base, first, True), recall=c)

    found = [effect("stack", "recursive", flat), effect("dense", "pages", flat),
             effect("dense", "fixed", up, budget=512), effect("dense", "fixed", up, bench="x")]
    pairs = header_pairs(found, 1024)
    assert [(e.treated.label, e.base.label) for e in pairs] == [
        ("router+dense", "pages+dense"), ("router+stack", "recursive+stack")]
    answer, cost = header_answer(found, 1024, {"router+dense": 100, "pages+dense": 20,
                                                "recursive+dense": 80})
    assert answer.startswith("no evidence either way: holding the retrieval fixed")
    assert "under dense, no measurable difference between router+dense and pages+dense" in answer
    assert "does not test the header" in answer
    assert "router gives 100 chunks to embed and index, pages 20, recursive 80" in cost
    found[0] = effect("stack", "recursive", up)
    answer, _ = header_answer(found, 1024, {})
    assert not answer.startswith("no evidence") and "router+stack" in answer
    assert header_answer([], 1024, {}) == ("", "")


def test_saved_hits_rebuild_a_ranking_that_packs_like_the_run(sample):
    from ragkit.report import budget_reading, hits_table, saved_hits

    gold = _gold(sample, "| Deferred revenue, non-current | 21.7 | 18.2 |")
    q = Query("q", "?", (gold,))
    hits = pd.DataFrame([
        {"run": "a", "query_id": "q", "rank": 1, "doc_id": sample.id, "start": gold.start - 400,
         "end": gold.end + 5, "score": 0.5, "tokens": 0, "prefix_tokens": 0},
        {"run": "a", "query_id": "q", "rank": 0, "doc_id": sample.id, "start": 0, "end": 1200,
         "score": 0.9, "tokens": 0, "prefix_tokens": 0},
        {"run": "b", "query_id": "q", "rank": 0, "doc_id": sample.id, "start": 0, "end": 10,
         "score": 0.9, "tokens": 0, "prefix_tokens": 3}])
    got = saved_hits(hits, "a", "q", {sample.id: sample})
    assert [(h.chunk.start, h.score) for h in got] == [(0, 0.9), (gold.start - 400, 0.5)]
    assert got[1].chunk.text == sample.text[gold.start - 400:gold.end + 5]
    table = hits_table(q, got, k=2, budgets=(500,))
    assert 300 < table["cl100k tokens"].iloc[0] < 500  # the first hit fills most of a 500-token context
    reading = budget_reading(table, 500)
    assert "at rank 2" in reading and "ends inside it" in reading  # ... which ends in the gold's
    with pytest.raises(ValueError, match="prefixes"):
        saved_hits(hits, "b", "q", {sample.id: sample})
