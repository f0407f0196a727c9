"""What a re-run of ``ragkit bench design`` replaces in its saved rows, and what it keeps."""

from ragkit.tools.bench_design import rewritten_by_design

MINILM = "all-MiniLM-L6-v2"


def row(benchmark="chroma", experiment="design", encoder=MINILM, first="dense", reranker="none"):
    return {"benchmark": benchmark, "experiment": experiment,
            "params": {"factor_encoder": encoder, "factor_first_stage": first,
                       "factor_reranker": reranker}}


def test_a_rerun_replaces_its_own_rows_and_keeps_what_other_options_wrote():
    def goes(r, rerank=()):
        return rewritten_by_design(r, ["chroma"], rerank, MINILM)

    assert goes(row()) and goes(row(first="stack"))
    assert goes(row(first="stack", reranker="cross-encoder"), rerank=["chroma"])
    assert not goes(row(first="stack", reranker="cross-encoder"))  # not re-ranked this time
    assert not goes(row(benchmark="course"))                       # another benchmark
    assert not goes(row(encoder="embeddinggemma"))                 # --second-encoder's rows
    assert not goes(row(first="dense+bm25 words"))                 # --steps' rows
    assert not goes(row(experiment="design_costs"))                # --costs' rows
    assert not goes({"benchmark": "chroma", "experiment": "encoder_costs", "params": {}})
