import pandas as pd

from ragkit.claims import CLAIMS, check_claims, verdict


def test_verdicts():
    assert verdict("match", 0.80, published=0.787) == "held"
    assert verdict("match", 0.70, published=0.787) == "not held"
    assert verdict("at_least", 0.60, published=0.67, tolerance=0.1) == "held"
    assert verdict("at_least", 0.40, published=0.67, tolerance=0.1) == "not held"
    assert verdict("higher", 0.5, baseline=0.4) == "held"
    assert verdict("higher", 0.3, baseline=0.4) == "not held"
    assert verdict("higher", None, baseline=0.4) == "not measurable here"
    assert verdict("match", float("nan"), published=0.5) == "not measurable here"


def test_check_claims_reads_rows_and_explains_gaps():
    df = pd.DataFrame([
        {"notebook": "bench_chroma_repro", "strategy": "recursive(250/125,cl100k_base)",
         "metric": "recall", "value": 0.784, "benchmark": "chroma", "embedder": "m"},
    ])
    out = check_claims(df)
    assert len(out) == len(CLAIMS)
    row = out[out.claim.str.startswith("recursive(250/125,cl100k_base): recall")].iloc[0]
    assert row.verdict == "held" and abs(row.ours - 0.784) < 1e-9
    faith = out[out.metric == "faithfulness"].iloc[0]
    assert faith.verdict == "not measurable here" and "OPENAI_API_KEY" in faith.reason
    gemma = out[out.claim.str.contains("EmbeddingGemma")].iloc[0]
    assert gemma.verdict == "not measurable here" and "RAGKIT_GEMMA_DIR" in gemma.reason
    missing = out[out.metric == "failure_reduction@20"].iloc[0]
    assert missing.verdict == "not measurable here" and "no results row" in missing.reason


def test_readme_section_is_generated_from_rows_and_timings(tmp_path, monkeypatch):
    import json

    from ragkit import readme

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    from ragkit.results import Recorder

    rec = Recorder("bench_chroma_repro")
    rec.add(experiment="chroma_repro", benchmark="chroma",
            strategy="recursive(250/125,cl100k_base)", metric="recall", value=0.70,
            embedder="m", k=5)
    rec.save()
    claims = readme.claims_table(tmp_path)
    line = next(x for x in claims.splitlines() if "recall 78.7" in x)
    assert "| 78.7 | 70.0 |" in line and line.endswith("not held |")
    assert readme.timing_line(tmp_path) == ""
    (tmp_path / "reproduce_times.json").write_text(json.dumps(
        {"total_s": 1500.0, "cpus": 2, "notebooks": {"02_x": 600.0, "05_y": 300.0},
         "env": {"RAGKIT_GEMMA_DIR": True}}))
    assert readme.timing_line(tmp_path).startswith(
        "The last full `make reproduce` took **25.0 min** on 2 CPUs with warm caches "
        "(RAGKIT_GEMMA_DIR set); slowest: 02_x 10.0 min")
    (tmp_path / "reproduce_times.json").write_text(json.dumps(
        {"total_s": 1500.0, "cpus": 2, "notebooks": {"02_x": 600.0},
         "vector_cache_mb_at_start": 0.0, "env": {"RAGKIT_GEMMA_DIR": False}}))
    assert readme.timing_line(tmp_path).startswith(
        "The last full `make reproduce` took **25.0 min** on 2 CPUs with an empty vector cache;")


def test_anthropic_claims_read_the_full_set_not_a_generators_subset():
    rows = [{"notebook": "04_contextual_retrieval", "benchmark": "anthropic",
             "metric": "failure_reduction@20", "strategy": "contextual embeddings + BM25",
             "value": v, "embedder": "m", "params": {"chunks": chunks}}
            for v, chunks in ((0.30, "upstream chunks"), (0.60, "upstream chunks · x subset"))]
    out = check_claims(pd.DataFrame(rows))
    row = out[out.claim.str.startswith("contextual embeddings + BM25:")].iloc[0]
    assert row.ours == 0.30 and row.verdict == "not held"
