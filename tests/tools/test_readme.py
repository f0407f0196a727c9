"""The README's generated section: leaderboards and the claim check, from rows and runs."""

import json

import pandas as pd

from ragkit.report import Recorder, read_rows


def _record(rec, strategy, per_query_recall, benchmark="chroma", experiment="chroma_repro"):
    from ragkit.experiments import Outcome

    n = len(per_query_recall)
    pq = pd.DataFrame({"query_id": [f"{benchmark}-{i:03d}" for i in range(n)], "type": "lookup",
                       "recall": per_query_recall, "recall@B1024": per_query_recall,
                       "pass@B1024": per_query_recall, "iou@B1024": [0.05] * n})
    means = {c: float(pq[c].mean()) for c in pq.columns if c not in ("query_id", "type")}
    out = Outcome(benchmark, strategy, [], {}, pq, means, [], {"retriever": "dense"}, {}, 12,
                  (1024,))
    return out.record(rec, experiment=experiment, embedder="all-MiniLM-L6-v2", k=5)


def test_readme_section_is_generated_from_rows_runs_and_timings(tmp_path, monkeypatch):
    from ragkit.tools import readme

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    rec = Recorder("bench_chroma_repro")
    _record(rec, "recursive(250/125,cl100k_base)", [1.0, 0.5, 0.75, 0.9] * 50)  # mean 0.7875
    _record(rec, "fixed_tokens(250/125,cl100k_base)", [1.0, 0.2, 0.4, 0.6] * 50)  # mean 0.55
    rec.save()
    claims = readme.claims_table(tmp_path)
    held = next(x for x in claims.splitlines() if "recursive(250/125,cl100k_base), k = 5: recall"
                in x)
    assert "| 78.7 | 78.8 |" in held and held.endswith("| 200 | held |")
    missed = next(x for x in claims.splitlines() if "fixed_tokens(250/125,cl100k_base), k = 5: "
                  "recall" in x)
    assert missed.endswith("| 200 | not held |")
    board = readme.results_table(tmp_path)
    assert "**chroma**" in board and "recursive(250/125,cl100k_base)" in board
    assert board.index("recursive(250/125") < board.index("fixed_tokens(250/125")
    assert readme.timing_line(tmp_path) == ""
    (tmp_path / "reproduce_times.json").write_text(json.dumps(
        {"total_s": 1500.0, "cpus": 2, "notebooks": {"02_x": 600.0},
         "vector_cache_mb_at_start": 0.0, "env": {"RAGKIT_GEMMA_DIR": False}}))
    assert readme.timing_line(tmp_path).startswith(
        "The last full `make reproduce` took **25.0 min** on 2 CPUs with an empty vector cache;")
    (tmp_path / "reproduce_times.json").write_text(json.dumps(
        {"total_s": 1500.0, "cpus": 2, "notebooks": {"02_x": 600.0}, "total_cpu_s": 1200.0,
         "load_average_at_start": 3.5, "vector_cache_mb_at_start": 10.0}))
    assert readme.timing_line(tmp_path).startswith(
        "The last full `make reproduce` took **25.0 min** on 2 CPUs with 10 MB of vectors "
        "already cached (the notebooks' kernels used 20.0 CPU-min; load average 3.5 at the "
        "start);")


def test_rows_keep_full_precision_and_runs_round_trip(tmp_path, monkeypatch):
    from ragkit.report import load_hits, load_scores

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    rec = Recorder("nb")
    rec.add(experiment="e", benchmark="b", strategy="s", metric="m", value=0.1 + 1.5e-7)
    rec.add(experiment="e", benchmark="b", strategy="t", metric="m", value=0.1)
    run = _record(rec, "recursive(250/125,cl100k_base)", [1 / 3, 2 / 3], benchmark="b")
    path = rec.save()
    values = {r["strategy"]: r["value"] for r in read_rows(path) if r["metric"] == "m"}
    assert values["s"] != values["t"] and values["s"] == 0.1 + 1.5e-7
    scores = load_scores(tmp_path)
    got = scores[(scores.run == run) & (scores.metric == "recall")].value.tolist()
    assert got == [1 / 3, 2 / 3]
    budgeted = scores[(scores.run == run) & (scores.metric == "recall@B")]
    assert set(budgeted.budget) == {1024}
    rows = [r for r in read_rows(path) if r["run"] == run]
    assert {r["metric"] for r in rows if r["budget"] == 1024} == {"recall@B", "pass@B", "iou@B"}
    assert all(r["depth"] == 12 for r in rows)
    assert load_hits(tmp_path).empty or "query_id" in load_hits(tmp_path)


def test_targets_section_reads_their_chunks_runs(tmp_path, monkeypatch):
    """Anthropic's Pass@k on their chunks comes from ``bench code``'s recorded runs, beside
    the published rows; no mixed-factor verdict is printed."""
    from ragkit.tools import readme

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    _their_chunks_run(monkeypatch)
    text = readme.wins_table(tmp_path)
    assert "beats" not in text.split("Anthropic")[0]
    assert "| all-MiniLM-L6-v2, stack | 50.0 [" in text
    assert "| contextual embeddings (published) | 86.37 | 92.81 | 93.78 |" in text


def test_a_tuning_sweeps_grid_points_stay_off_the_board_and_the_chosen_one_is_ranked(
        tmp_path, monkeypatch):
    """`bench prose` records every grid point; only the chosen one (and the re-run reference
    rows) may be ranked, else the board picks the best of many on the questions it scores."""
    from ragkit.tools import readme

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    rec = Recorder("bench_prose")
    _record(rec, "prose(64)+stack(lucky)", [1.0] * 40, experiment="prose_candidates")
    _record(rec, "prose(128)+stack(chosen)", [0.8] * 40, experiment="prose_chosen")
    for split, recall, iou in (("tune", 0.83, 0.073), ("held-out", 0.80, 0.071),
                               ("all", 0.815, 0.072)):
        for metric, value in (("recall", recall), ("iou", iou)):
            rec.add(experiment="prose_target", benchmark="chroma",
                    strategy="prose(128)+stack(chosen)", metric=metric, value=value, k=5,
                    embedder="all-MiniLM-L6-v2", n_queries=40,
                    params={"split": split, "role": "chosen, any pipeline",
                            "sizes_tried": [64, 128], "pipelines_tried": ["dense", "stack"]})
    ref = "fixed_tokens(250/125,cl100k_base)"
    for split, iou in (("held-out", 0.040), ("all", 0.039)):  # Chroma's row re-run here
        rec.add(experiment="prose_target", benchmark="chroma", strategy=ref, metric="iou",
                value=iou, k=5, embedder="all-MiniLM-L6-v2", n_queries=40,
                params={"split": split, "role": "Chroma's best row, re-run"})
    for split, diff in (("held-out", 0.031), ("all", 0.033)):
        rec.add(experiment="prose_target_paired", benchmark="chroma",
                strategy=f"chosen - {ref}", metric="diff_iou", value=diff, k=5,
                embedder="all-MiniLM-L6-v2", n_queries=40,
                params={"split": split, "ci95": [diff - 0.004, diff + 0.004]})
    rec.save()
    board = readme.results_table(tmp_path)
    assert "prose(128)+stack(chosen)" in board and "lucky" not in board
    from ragkit.report import load_results

    text = "\n".join(readme.prose_lines(load_results(tmp_path)))
    assert "**prose(128)+stack(chosen)**" in text and "2 sentence-group sizes x 2" in text
    # held-out only: the chosen row's held-out values, the re-run row's on the same questions
    assert "held-out half (n 40), recall 80.00 and IoU 7.10" in text
    assert ("against fixed_tokens(250/125,cl100k_base) re-run on them: IoU 4.00 there, "
            "difference +3.10 [+2.70, +3.50] beats") in text
    assert "83.00" not in text and "81.50" not in text and "+3.30" not in text  # tune, all


def test_one_configuration_measured_at_fewer_budgets_is_one_board_row(tmp_path, monkeypatch):
    """A bench that computes only the default budget re-runs a notebook's configuration: equal
    values at the fixed-k metrics and at 1,024 tokens make them one row naming both; a run
    that differs there stays a row of its own."""
    from ragkit.experiments import Outcome
    from ragkit.report import leaderboard as lb
    from ragkit.report import load_results, load_scores

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    vals = [1.0, 0.5, 0.25, 0.75] * 10
    qids = [f"q{i}" for i in range(len(vals))]

    def record(notebook, strategy, budgets, values):
        rec = Recorder(notebook)
        pq = pd.DataFrame({"query_id": qids, "type": "lookup", "recall": values,
                           **{f"{m}@B{b}": values for m in ("recall", "pass", "iou")
                              for b in budgets}})
        means = {c: float(pq[c].mean()) for c in pq.columns if c not in ("query_id", "type")}
        Outcome("chroma", strategy, [], {}, pq, means, [], {"retriever": "dense"}, {}, 12,
                tuple(budgets)).record(rec, experiment="x", embedder="m", k=5)
        rec.save()

    record("02_nb", "cluster(200)", (512, 1024, 2048), vals)
    record("bench_b", "cluster(200)", (1024,), vals)
    record("bench_c", "cluster(200) other", (1024,), vals[1:] + vals[:1])
    board = lb.board(load_results(tmp_path), load_scores(tmp_path), "chroma", 1024)
    assert len(board) == 2
    assert set(board.notebooks) == {"02_nb, bench_b", "bench_c"}


def _their_chunks_run(monkeypatch):
    """``bench code``'s run on Anthropic's own chunks, for a two-question stand-in of their set:
    question a retrieves its gold chunk, question b a chunk holding other text."""
    from types import SimpleNamespace

    import ragkit.evaluate.benchmarks
    from ragkit.experiments import Outcome
    from ragkit.retrieve import Hit
    from ragkit.types import Chunk, Document, Query, Span

    doc = Document("d", "alpha beta gamma delta")
    bench = SimpleNamespace(documents=[doc], queries=[
        Query("a", "?", gold=(Span("d", 0, 5),)), Query("b", "?", gold=(Span("d", 6, 10),))])
    monkeypatch.setattr(ragkit.evaluate.benchmarks, "load", lambda name: bench)
    hits = {"a": [Hit(Chunk.make(doc, 0, 5, "upstream"), 1.0)],
            "b": [Hit(Chunk.make(doc, 11, 16, "upstream"), 1.0)]}
    pq = pd.DataFrame({"query_id": ["a", "b"], "type": "lookup", "pass@5": [1.0, 0.0]})
    code = Recorder("bench_code")
    Outcome("anthropic", "upstream+stack", [], hits, pq, {"pass@5": 0.5}, [], {}, {}, 20, ()
            ).record(code, experiment="their_chunks", embedder="all-MiniLM-L6-v2", k=5)
    code.save()


def test_their_chunks_against_ragkits_code_chunks_at_an_equal_budget(tmp_path, monkeypatch):
    """Fixed-k Pass@k is set beside the published rows only on their own chunks; ragkit's code
    chunks meet theirs at an equal budget, under the same encoder and stack, paired, on the
    held-out half only (the code chunker was tuned on the other)."""
    from ragkit.evaluate.splits import split_of
    from ragkit.experiments import Outcome
    from ragkit.tools import readme

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    _their_chunks_run(monkeypatch)
    ids = [f"anthropic-{i:03d}" for i in range(40)]
    held = [q for q in ids if split_of(q) == "held-out"]
    code = Recorder("bench_code")
    for experiment, strategy, good in (("their_chunks", "upstream+stack", 1.0),
                                       ("code_runs", readme.CODE_CHUNKS, 0.0)):
        vals = [good if q in held else 0.5 for q in ids]  # theirs ahead on the held-out half
        pq = pd.DataFrame({"query_id": ids, "type": "lookup", "pass@B512": vals,
                           "recall@B512": vals})
        Outcome("anthropic", strategy, [], {}, pq, {"mean_chunk_chars": 700.0}, [], {}, {}, 20,
                (512,)).record(code, experiment=experiment, embedder="embeddinggemma", k=5)
    code.save()
    lines = readme.wins_table(tmp_path).splitlines()
    assert not [x for x in lines if "ragkit's chunks" in x and "Pass@" not in x
                and x.startswith("| embeddinggemma,")]  # no fixed-k row of ragkit's chunks
    [row] = [x for x in lines if x.startswith("| embeddinggemma | 512 |")]
    cells = row.split(" | ")
    assert cells[2].startswith("+100.0 [") and cells[2].endswith("beats")  # held-out
    assert cells[3].startswith("+100.0 [")                                 # recall, held-out
    assert row.endswith(f" | {len(held)} |")


def test_a_tuned_configurations_paragraphs_quote_held_out_numbers_only():
    """The targets paragraph (bench prose's tuned configuration) and the code chunker's table
    quote the held-out half, set against Chroma's rows re-run on the same held-out questions:
    never all questions, never the published all-question targets."""
    from ragkit.evaluate.splits import load_splits
    from ragkit.tools import readme

    text = readme.wins_table()
    prose = next(x for x in text.splitlines() if x.startswith("`ragkit bench prose`"))
    chroma_held = sum(1 for q, s in load_splits().items()
                      if q.startswith("chroma-") and s == "held-out")
    assert f"held-out half (n {chroma_held})" in prose
    assert "re-run on them" in prose and "all questions" not in prose
    assert "82.4" not in prose.split("published")[0]  # the published target is not a yardstick
    assert "beside all questions" not in text and "| n |" in text
    results = (readme.PROJECT_ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert prose in results  # the committed page says the same


def test_a_warm_run_keeps_the_last_fresh_clone_timing_beside_it(tmp_path, monkeypatch):
    """A whole run on a warm vector cache replaces the record but keeps the last run on an
    empty cache (and the other way round); the README line gives both."""
    from ragkit.tools import readme
    from ragkit.tools.reproduce import notebook_sources, write_times

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    stems = [s.stem for s in notebook_sources()]
    write_times("full", {s: 240.0 for s in stems}, 240.0 * len(stems), cache_at_start=0.0)
    first = readme.timing_line(tmp_path)
    assert "with an empty vector cache" in first and " With " not in first
    write_times("full", {s: 60.0 for s in stems}, 60.0 * len(stems), cache_at_start=200.0)
    line = readme.timing_line(tmp_path)
    assert line.startswith(f"The last full `make reproduce` took **{len(stems):.1f} min** on ")
    assert "with 200 MB of vectors already cached" in line
    assert f"With an empty vector cache (a fresh clone) it took **{4 * len(stems):.1f} min**" \
        in line
    # a second warm run replaces the warm entry only
    write_times("full", {s: 30.0 for s in stems}, 30.0 * len(stems), cache_at_start=210.0)
    record = json.loads((tmp_path / "reproduce_times.json").read_text())
    assert record["by_cache"]["empty"]["total_s"] == 240.0 * len(stems)
    assert record["by_cache"]["warm"]["total_s"] == 30.0 * len(stems)


def test_a_record_from_before_cache_states_were_kept_counts_as_its_own_state(tmp_path,
                                                                            monkeypatch):
    from ragkit.tools import readme
    from ragkit.tools.reproduce import notebook_sources, write_times

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    (tmp_path / "reproduce_times.json").write_text(json.dumps(
        {"total_s": 2664.6, "total_cpu_s": 4689.0, "cpus": 2, "notebooks": {"01_x": 600.0},
         "vector_cache_mb_at_start": 0.0, "load_average_at_start": 1.34}))
    stems = [s.stem for s in notebook_sources()]
    write_times("full", {s: 60.0 for s in stems}, 60.0 * len(stems), cache_at_start=212.0)
    assert "With an empty vector cache (a fresh clone) it took **44.4 min**" in \
        readme.timing_line(tmp_path)


def test_record_keeps_ranked_hits_as_deep_as_asked_beyond_the_budgets_context(tmp_path,
                                                                             monkeypatch):
    from ragkit.experiments import Outcome
    from ragkit.report import load_hits
    from ragkit.retrieve import Hit
    from ragkit.types import Chunk

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    text = "word " * 400
    chunks = [Chunk("d", 20 * i, 20 * i + 20, text[20 * i: 20 * i + 20], "fixed")
              for i in range(25)]
    hits = {"q0": [Hit(c, 1.0 - i / 100) for i, c in enumerate(chunks)]}
    pq = pd.DataFrame({"query_id": ["q0"], "type": "lookup", "recall@B16": [1.0]})
    rec = Recorder("nb")
    for keep in (20, 10):
        Outcome("chroma", f"s{keep}", chunks, hits, pq, {"recall@B16": 1.0}, [],
                {"retriever": "dense"}, {}, 25, (16,)).record(
                    rec, experiment="x", embedder="e", k=5, keep_hits=keep)
    rec.save()
    depth = load_hits(tmp_path).groupby("run")["rank"].max().sort_values().tolist()
    assert depth == [9, 19]  # a 16-token context holds fewer than ten of these chunks


def test_boards_rank_every_row_on_the_held_out_half_and_mark_tuned_rows(tmp_path, monkeypatch):
    from ragkit.report import leaderboard as lb
    from ragkit.report.results import load_results, load_scores
    from ragkit.evaluate.splits import split_of

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    ids = [f"chroma-{i:03d}" for i in range(200)]
    held = [split_of(q) == "held-out" for q in ids]
    rec = Recorder("bench_x")
    # the router is best on the tune half only; the baseline on the held-out half
    _record(rec, "router+stack", [0.9 if not h else 0.5 for h in held])
    _record(rec, "fixed_chars(1000/200)+stack", [0.6] * 200)
    rec.save()
    rows, scores = load_results(tmp_path), load_scores(tmp_path)
    everyone = lb.board(rows, scores, "chroma", 1024)
    b = lb.board(rows, scores, "chroma", 1024, split="held-out")
    assert list(b.n.unique()) == [sum(held)]
    assert b.strategy.iloc[0] == "fixed_chars(1000/200)+stack" and not b.tuned.iloc[0]
    assert b.tuned.iloc[1] and "router+stack *(tuned)*" in lb.markdown(b)
    assert len(everyone) == 2 and everyone.n.iloc[0] == 200


def test_speed_section_gives_the_thread_share_and_the_cold_floor_from_their_rows(tmp_path,
                                                                               monkeypatch):
    from ragkit.tools import readme

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    rec = Recorder("bench_threads")
    for label, secs, same in (("1 kernel alone", 20.0, 1.0), ("2 kernels, share", 22.0, 1.0),
                              ("2 kernels, every thread", 24.0, 0.0)):
        common = dict(experiment="thread_share", benchmark="chroma", strategy=label,
                      embedder="all-MiniLM-L6-v2", params={"texts": 480, "cpus": 2})
        rec.add(**common, metric="seconds", value=secs)
        rec.add(**common, metric="time_vs_alone", value=secs / 20.0)
        rec.add(**common, metric="vectors_identical", value=same)
    rec.save()
    text = readme.speed_section(tmp_path)
    assert text.startswith("Two notebook kernels encoding at once")  # no blank line first
    assert "| 2 kernels, share | 22.0 | 1.10 | yes |" in text
    assert "| 2 kernels, every thread | 24.0 | 1.20 | no |" in text
    floor = Recorder("bench_floor")
    common = dict(experiment="encoder_floor", benchmark="cache", strategy="onnx",
                  embedder="all-MiniLM-L6-v2",
                  params={"texts": 95875, "tokens": 11778710, "limit": 256, "sample": 960,
                          "cpus": 2})
    floor.add(**common, metric="tokens_per_s", value=4999.0)
    floor.add(**common, metric="floor_minutes", value=11778710 / 4999.0 / 60)
    floor.save()
    text = readme.speed_section(tmp_path)
    assert "95,875 texts, 11,778,710 tokens" in text and "4,999 tokens/s" in text
    assert "needs 39.3 min" in text


def test_speed_section_is_generated_from_the_encoder_and_precision_rows(tmp_path, monkeypatch):
    """Issue 34: the encoder's throughput against the CPU's matmul rate, and bf16's recall@B
    drift, reach the README from their rows, never typed."""
    from ragkit.tools import readme

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    assert readme.speed_section(tmp_path) == ""  # no rows, no section
    rec = Recorder("bench_encoder_speed")
    for label, tps, ratio, frac in (("onnx", 22.0, 1.1, 0.74), ("torch", 20.0, 1.0, 0.66)):
        common = dict(experiment="encoder_speed", benchmark="chroma", strategy=label,
                      embedder="all-MiniLM-L6-v2")
        rec.add(**common, metric="texts_per_s", value=tps, params={"texts": 480, "best_of": 3})
        rec.add(**common, metric="speed_vs_torch", value=ratio)
        rec.add(**common, metric="gflops", value=100 * ratio)
        rec.add(**common, metric="fraction_of_matmul_rate", value=frac)
    rec.add(experiment="encoder_speed", benchmark="cpu", strategy="torch.mm 2048",
            metric="matmul_gflops", value=151.0, embedder="")
    rec.save()
    drift = Recorder("bench_precision")
    for bench, budget, value in (("course", 512, -0.0067), ("course", 1024, 0.0)):
        drift.add(experiment="precision_drift", benchmark=bench, strategy="fixed",
                  metric=f"recall@B{budget} bf16 - fp32", value=value, budget=budget,
                  n_queries=233, params={"low": value - 0.01, "high": value + 0.01})
    drift.save()
    text = readme.speed_section(tmp_path)
    lines = text.split("\n")
    rows = [line for line in lines if line.startswith("| torch") or line.startswith("| onnx")]
    assert rows[0].startswith("| torch | 20.0 | 1.00 |") and "| 66% |" in rows[0]
    assert rows[1].startswith("| onnx | 22.0 | 1.10 |") and "| 74% |" in rows[1]
    assert "151 GFLOP/s" in text and "above 100 %" not in text
    assert "| course | 233 | -0.67 [-1.67, +0.33] | +0.00 [-1.00, +1.00] |" in lines
    readme_path = tmp_path / "README.md"
    readme_path.write_text("x\n<!-- results:start -->\n<!-- results:end -->\n"
                           "<!-- reliability:start -->\n<!-- reliability:end -->\n"
                           "<!-- speed:start -->\nold\n<!-- speed:end -->\n")
    monkeypatch.setattr(readme, "generated", lambda: "g")
    monkeypatch.setattr(readme, "reliability_table", lambda: "r")
    monkeypatch.setattr(readme, "speed_section", lambda: "speed")
    assert readme.update_readme(readme_path)
    assert "<!-- speed:start -->\nspeed\n<!-- speed:end -->" in readme_path.read_text()



def test_the_speed_section_reports_int8_from_its_rows(tmp_path, monkeypatch):
    """Issue 48: int8 measured as bf16 was, its speed, batch drift and recall@B drift read from
    ``bench_int8.jsonl``, and why it is not a setting."""
    from ragkit.tools import readme

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    rec = Recorder("bench_int8")
    common = dict(experiment="int8", benchmark="chroma", embedder="all-MiniLM-L6-v2")
    rec.add(**common, strategy="onnx int8", metric="speed_vs_fp32", value=2.0,
            params={"texts": 480, "int8_runs": [1.0, 1.1, 1.2], "fp32_runs": [2.0, 2.1, 2.2]})
    rec.add(**common, strategy="onnx int8", metric="min_cosine_to_fp32", value=0.9812)
    rec.add(**common, strategy="onnx int8", metric="batch_drift", value=0.025)
    rec.add(**common, strategy="onnx fp32", metric="batch_drift", value=0.0)
    rec.add(experiment="int8_drift", benchmark="chroma", strategy="fixed", embedder="m",
            metric="recall@B1024 int8 - fp32", value=-0.0266, budget=1024, n_queries=472,
            params={"low": -0.05, "high": -0.0057})
    rec.save()
    text = readme.speed_section(tmp_path)
    assert "**2.00×** the float32 graph's speed on 480 Chroma chunks" in text
    assert "1.0–1.2 s against 2.0–2.2 s" in text and "lowest cosine to float32 0.9812" in text
    assert "up to 2.5e-02 with the batch it shares (float32: 0.0e+00)" in text
    assert "not offered as a setting" in text
    assert "| chroma | 472 | -2.66 [-5.00, -0.57] |" in text.split("\n")

def test_the_timing_line_says_how_many_notebooks_ran_at_once(tmp_path, monkeypatch):
    from ragkit.tools import readme
    from ragkit.tools.reproduce import notebook_sources, write_times

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    stems = [s.stem for s in notebook_sources()]
    write_times("full", {s: 60.0 for s in stems}, 300.0, cache_at_start=0.0)
    assert "notebooks at a time" not in readme.timing_line(tmp_path)
    write_times("full", {s: 30.0 for s in stems}, 240.0, cache_at_start=200.0, jobs=2)
    line = readme.timing_line(tmp_path)
    assert line.startswith("The last full `make reproduce` took **4.0 min** on ")
    assert ", 2 notebooks at a time, with 200 MB of vectors" in line
    assert "With an empty vector cache (a fresh clone) it took **5.0 min** (" in line
    record = json.loads((tmp_path / "reproduce_times.json").read_text())
    assert record["jobs"] == 2 and record["by_cache"]["warm"]["jobs"] == 2


def test_the_speed_section_gives_both_precisions_cold_runs_and_the_check(tmp_path):
    from ragkit.tools.readme import _cold_runs

    run = {"total_s": 2400.0, "cpus": 2, "jobs": 2, "load_average_at_start": 0.4,
           "finished": "2026-12-06T07:00:00+00:00"}
    times = {"by_cache": {"empty": run, "warm": {**run, "total_s": 330.0}},
             "bf16_here": "this CPU has no bfloat16 arithmetic"}
    (tmp_path / "reproduce_times.json").write_text(json.dumps(times))
    text = "\n".join(_cold_runs(tmp_path))
    assert "empty vector cache (a fresh clone) **40.0 min**" in text
    assert "with the vectors cached **5.5 min**" in text
    assert 'the record\'s machine said: "this CPU has no bfloat16 arithmetic"' in text
    # a machine with bfloat16 and no bf16 run yet: no refusal is quoted
    (tmp_path / "reproduce_times.json").write_text(json.dumps({**times, "bf16_here": "available"}))
    text = "\n".join(_cold_runs(tmp_path))
    assert "No bfloat16 run is recorded yet" in text and "refuses" not in text
    (tmp_path / "bf16").mkdir()
    (tmp_path / "bf16" / "reproduce_times.json").write_text(json.dumps(
        {"by_cache": {"empty": {**run, "total_s": 1440.0}}}))
    (tmp_path / "bf16" / "verdict_diff.json").write_text(json.dumps(
        {"recall_at_b": {"chroma": {"largest": -0.42}}, "verdict_lines": {"07": 30},
         "differing": {"07": ["- a beats b", "+ no measurable difference"]}}))
    text = "\n".join(_cold_runs(tmp_path))
    assert "from an empty cache **24.0 min**" in text and "chroma -0.42 points" in text
    assert "1.67x as fast as float32 from an empty cache" in text  # 40.0 min / 24.0 min
    assert "differ: 2 of 30" in text and "refuses" not in text


ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def test_the_readme_is_one_short_page_whose_docs_links_all_exist():
    """Issue 50, item 6: README.md stays under 15,000 bytes (the long sections live in docs/),
    and every docs/ page it links, and every page those pages link, exists."""
    import re

    readme = ROOT / "README.md"
    assert readme.stat().st_size < 15_000, f"README.md is {readme.stat().st_size:,} bytes"
    text = readme.read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\((docs/[^)#\s]+)", text))
    assert "docs/glossary.md" in linked and "docs/results.md" in linked
    for page in sorted(linked):
        assert (ROOT / page).is_file(), f"README.md links {page}, which does not exist"
    for page in sorted((ROOT / "docs").glob("*.md")):
        for target in re.findall(r"\]\(([^)#\s:]+)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.name} links {target}, not there"
    first_screen = text[:4000]
    for needed in ("make reproduce", "make test", "make lab", "00_setup", "01_naive_failures",
                   "<!-- title:start -->", "<!-- timing:start -->"):
        assert needed in first_screen, needed


def test_every_generated_section_lives_in_exactly_one_page_and_is_filled_there(tmp_path,
                                                                             monkeypatch):
    """`update_readme` fills each pair of markers wherever it lives, README.md or a docs/ page
    beside it; in the repository each pair is in exactly one file."""
    from ragkit.tools import readme
    from ragkit.tools.readme_scale import SCALE

    pairs = [(readme.START, readme.END), readme.RELIABILITY, readme.TITLE, readme.SPEED,
             SCALE, readme.TIMING]
    files = readme.pages(ROOT / "README.md")
    for start, end in pairs:
        holders = [f.name for f in files if start in f.read_text(encoding="utf-8")]
        assert len(holders) == 1, f"{start} in {holders}"
        assert all(f.read_text(encoding="utf-8").count(end) == (start in
                   f.read_text(encoding="utf-8")) for f in files), end
    page = tmp_path / "README.md"
    page.write_text(f"top\n{readme.TITLE[0]}\nold title\n{readme.TITLE[1]}\n"
                    f"{readme.TIMING[0]}\n{readme.TIMING[1]}\n")
    (tmp_path / "docs").mkdir()
    results = tmp_path / "docs" / "results.md"
    results.write_text(f"# Results\n{readme.START}\nstale\n{readme.END}\n"
                       f"{readme.RELIABILITY[0]}\n{readme.RELIABILITY[1]}\nrest\n")
    for name, value in (("generated", "boards"), ("reliability_table", "areas"),
                        ("title_line", "# new title"), ("timing_line", "took 5 min")):
        monkeypatch.setattr(readme, name, lambda value=value: value)
    assert readme.update_readme(page)
    assert page.read_text() == (f"top\n{readme.TITLE[0]}\n# new title\n{readme.TITLE[1]}\n"
                                f"{readme.TIMING[0]}\ntook 5 min\n{readme.TIMING[1]}\n")
    assert f"{readme.START}\nboards\n{readme.END}" in results.read_text()
    assert "stale" not in results.read_text() and results.read_text().endswith("rest\n")
    assert not readme.update_readme(page)  # a second run changes nothing
    results.write_text("# Results, markers gone\n")
    import pytest

    with pytest.raises(ValueError, match="results:start"):
        readme.update_readme(page)
