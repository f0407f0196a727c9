"""The `ragkit` command line, run for real in a subprocess on a small corpus of mixed files."""

import json
import os
import subprocess
import sys

import pytest

from ragkit.report import read_rows
from ragkit.report.results import SCHEMA
from test_html import PAGE  # tests/ is on sys.path (its conftest.py), as for `conftest`

MARKDOWN = """---
doc_id: refunds
title: Refund Policy
---
# Refund Policy

## Refund eligibility by tier

| Tier | Refund window | Fee |
|------|---------------|-----|
| Gold | 14 days | 2% |
| Silver | 7 days | 5% |

Refunds are available within 14 days of purchase. This applies to unused services only.
"""

CODE = '''"""Rate limiting for the public API."""
import time


class TokenBucket:
    """Allows `rate` requests per second with bursts up to `capacity`."""

    def __init__(self, rate: float, capacity: int):
        self.rate = rate
        self.capacity = capacity
        self.tokens = capacity
        self.updated = time.monotonic()

    def allow(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
        self.updated = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False
'''


@pytest.fixture()
def corpus(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "refunds.md").write_text(MARKDOWN, encoding="utf-8")
    (d / "ratelimit.py").write_text(CODE, encoding="utf-8")
    (d / "retention.html").write_text(PAGE, encoding="utf-8")
    (d / "broken.md").write_bytes(b"caf\xe9 au lait\n")
    questions = [
        {"id": "gold", "question": "How long is the Gold refund window?",
         "evidence": [{"doc_id": "refunds", "quote": "| Gold | 14 days | 2% |"}]},
        {"id": "caveat", "question": "Which services can be refunded?",
         "evidence": [{"quote": "This applies to unused services only."}]},
        {"id": "bucket", "question": "How does the rate limiter refill tokens?",
         "evidence": [{"doc_id": "ratelimit", "quote": "self.tokens + (now - self.updated) * self.rate"}]},
        {"id": "purge", "question": "How long are deleted workspaces kept?",
         "evidence": [{"quote": "Deleted workspaces are kept for 30 days and then purged."}]},
        {"id": "missing", "question": "What is the Platinum window?",
         "evidence": [{"quote": "Platinum tier gets 30 days"}]},
        {"id": "twice", "question": "Which window is 14 days?",
         "evidence": [{"doc_id": "refunds", "quote": "14 days"}]},
    ]
    q = tmp_path / "questions.jsonl"
    q.write_text("".join(json.dumps(x) + "\n" for x in questions), encoding="utf-8")
    return d, q


def run(*args, env_extra=None):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([sys.executable, "-m", "ragkit", *args], capture_output=True,
                          text=True, env=env, timeout=600)


def test_eval_ranks_strategies_and_writes_rows(corpus, tmp_path):
    docs, questions = corpus
    results = tmp_path / "rows.jsonl"
    out = run("eval", "--corpus", str(docs), "--golden", str(questions), "--strategies",
              "fixed_chars:200/0,recursive:60/0", "--k", "2", "--results", str(results))
    assert out.returncode == 1, out.stderr  # finished, with skipped items to report
    table = [l for l in out.stdout.splitlines() if l[:2].strip() in ("1", "2")]
    assert len(table) == 2 and {"fixed_chars(200/0)", "recursive(60/0,cl100k_base)"} == {
        l.split()[1] for l in table}
    assert "3 documents, 4 answerable questions, k = 2" in out.stdout
    # problems: the unreadable file and the two bad quotes, each with its line
    assert "skipped: 1 file(s), 2 question(s)" in out.stderr
    assert "broken.md:1: not valid UTF-8" in out.stderr
    assert f"{questions}:line 5 (missing): quote not found" in out.stderr
    assert f"{questions}:line 6 (twice): quote occurs 2 times" in out.stderr
    rows = read_rows(results)
    assert rows and all(set(r) == set(SCHEMA) for r in rows)
    assert {r["strategy"] for r in rows} == {"fixed_chars(200/0)", "recursive(60/0,cl100k_base)"}
    assert {r["n_queries"] for r in rows} == {4}


def test_show_prints_gold_and_hits(corpus):
    docs, questions = corpus
    out = run("show", "--corpus", str(docs), "--golden", str(questions), "--question", "purge",
              "--strategies", "recursive:60/0", "--k", "2")
    assert out.returncode == 1  # the broken file is still reported
    assert "gold retention[" in out.stdout and "Deleted workspaces are kept" in out.stdout
    assert "=== recursive(60/0,cl100k_base)" in out.stdout and "*1." in out.stdout


def test_chunk_writes_jsonl(corpus, tmp_path):
    docs, _ = corpus
    out_file = tmp_path / "chunks.jsonl"
    out = run("chunk", str(docs / "refunds.md"), "--strategy", "recursive:40/0", "--out",
              str(out_file))
    assert out.returncode == 0, out.stderr
    chunks = [json.loads(l) for l in out_file.read_text().splitlines()]
    assert chunks and all(c["doc_id"] == "refunds" for c in chunks)


def test_fatal_and_usage_exit_codes(tmp_path):
    assert run("eval", "--corpus", str(tmp_path / "nope"), "--golden", "x").returncode == 3
    assert run("eval").returncode == 2
    assert run("eval", "--corpus", str(tmp_path), "--golden", "x", "--strategies",
               "nope").returncode == 2  # a bad command line, not "nothing to evaluate"


@pytest.mark.parametrize("args, needle", [
    (["--k", "0"], "--k: must be at least 1"),
    (["--k", "-3"], "--k: must be at least 1"),
    (["--strategies", ","], "names no strategy"),
    (["--strategies", "nope"], "unknown chunker 'nope'"),
    (["--strategies", "recursive:abc"], "NAME:SIZE"),
    (["--strategies", "recursive:10/20"], "OVERLAP < SIZE"),
    (["--strategies", "structure:100"], "takes no SIZE/OVERLAP"),
    (["--embedder", "/nonexistent"], "--embedder /nonexistent: no such folder"),
    # issue 36: numbers past a stated maximum (--k 2147483648 aborted in faiss: std::bad_alloc)
    (["--k", "2147483648"], "--k: must be at most 10000, got 2147483648"),
    (["--k", "9" * 5000], "--k: must be at most 10000, got a number of 5000 digits"),
    (["--strategies", "recursive:2147483648/0"], "SIZE must be at most 1000000"),
    (["--strategies", "fixed_chars:100/99999999999"], "need SIZE > 0 and 0 <= OVERLAP < SIZE"),
])
def test_argument_errors_exit_2_with_one_line(tmp_path, args, needle):
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    (tmp_path / "q.jsonl").write_text('{"id": "1", "question": "?", "evidence": '
                                      '[{"quote": "text"}]}\n')
    out = run("eval", "--corpus", str(tmp_path), "--golden", str(tmp_path / "q.jsonl"),
              "--results", str(tmp_path / "rows.jsonl"), *args)
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and needle in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1  # one line
    assert not (tmp_path / "rows.jsonl").exists()  # --k 0 used to append all-zero rows


@pytest.mark.parametrize("args, needle", [
    (["show", "--question", "1", "--k", "2147483648"], "--k: must be at most 10000"),
    (["chunk", "--limit", "1" + "0" * 20], "--limit: must be at most"),
    (["chunk", "--strategy", "recursive:99999999999999999999"], "SIZE must be at most"),
])
def test_numbers_past_their_maximum_exit_2_before_any_work(tmp_path, args, needle):
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    (tmp_path / "q.jsonl").write_text('{"id": "1", "question": "?", "evidence": '
                                      '[{"quote": "text"}]}\n')
    where = ([str(tmp_path)] if args[0] == "chunk" else
             ["--corpus", str(tmp_path), "--golden", str(tmp_path / "q.jsonl")])
    out = run(args[0], *where, *args[1:])
    assert out.returncode == 2, out.stderr
    assert "Traceback" not in out.stderr and needle in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args, needle", [
    (["index", "SRC", "--out", "OUT", "--num-proc", "2147483648"], "--num-proc: must be at most"),
    (["index", "SRC", "--out", "OUT", "--shard-docs", "0"], "--shard-docs: must be at least 1"),
    (["preambles", "--benchmark", "course", "--generator", "structural", "--budget", "-1"],
     "--budget: must be at least 1"),
    (["bench", "rerank-why", "--limit", "2147483648"], "--limit: must be at most"),
    (["bench", "context-speed", "--chunks", "9" * 30], "--chunks: must be at most 1000"),
])
def test_the_tools_numbers_have_a_stated_range(tmp_path, args, needle):
    args = [str(tmp_path / a) if a in ("SRC", "OUT") else a for a in args]
    out = run(*args)
    assert out.returncode == 2 and "Traceback" not in out.stderr and needle in out.stderr
    assert not (tmp_path / "OUT").exists()


def test_show_finds_a_question_id_typed_in_another_unicode_form(tmp_path):
    import unicodedata

    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    (tmp_path / "q.jsonl").write_text(json.dumps({
        "id": unicodedata.normalize("NFC", "qé"), "question": "?",
        "evidence": [{"quote": "no such text"}]}) + "\n", encoding="utf-8")
    out = run("show", "--corpus", str(tmp_path), "--golden", str(tmp_path / "q.jsonl"),
              "--question", unicodedata.normalize("NFD", "qé"))
    assert out.returncode == 3 and "Traceback" not in out.stderr
    assert "was skipped" in out.stderr and "quote not found" in out.stderr


def test_chunk_on_a_bad_file_exits_3_and_debug_shows_the_traceback(tmp_path):
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"---\neffective_date: 2024-02-30\n---\nbody\n")
    out = run("chunk", str(bad))
    assert out.returncode == 3 and "Traceback" not in out.stderr
    assert f"{bad}:2: " in out.stderr and "not a valid date" in out.stderr
    out = run("--debug", "chunk", str(bad))
    assert out.returncode == 3 and "Traceback" in out.stderr


@pytest.mark.parametrize("golden, needle", [
    (b'[{"id": "a", "question": "?"}]\n', "JSON array"),
    ("id,question,quote\nq1,Caf\xe9?,x\n".encode("latin-1"), ":2: not valid UTF-8"),
])
def test_unusable_golden_files_exit_3_without_a_traceback(tmp_path, golden, needle):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\ntext\n")
    q = tmp_path / ("q.csv" if b"id,question" in golden else "q.jsonl")
    q.write_bytes(golden)
    out = run("eval", "--corpus", str(tmp_path / "docs"), "--golden", str(q))
    assert out.returncode == 3 and "Traceback" not in out.stderr and needle in out.stderr


def test_a_corrupt_results_file_is_refused_before_any_work(tmp_path, corpus):
    docs, questions = corpus
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"ok": 1}\n{broken\n')
    out = run("eval", "--corpus", str(docs), "--golden", str(questions), "--results", str(rows))
    assert out.returncode == 3 and "Traceback" not in out.stderr
    assert f"{rows}:2: not a JSON row" in out.stderr
    assert rows.read_text() == '{"ok": 1}\n{broken\n'


def test_eval_reports_duplicates_bad_dates_and_a_read_only_cache(corpus, tmp_path):
    docs, questions = corpus
    (docs / "dated.md").write_bytes(b"---\neffective_date: 2024-02-30\n---\nbody\n")
    lines = questions.read_text().split("\n")
    dup = json.loads(lines[0])
    dup["evidence"] = [{"quote": "This applies to unused services only."}]
    questions.write_text("\n".join(lines[:4]) + "\n" + json.dumps(dup) + "\n")
    blocked = tmp_path / "cache-is-a-file"
    blocked.write_text("x")
    results = tmp_path / "rows.jsonl"
    out = run("eval", "--corpus", str(docs), "--golden", str(questions), "--strategies",
              "recursive:60/0", "--k", "2", "--results", str(results),
              env_extra={"RAGKIT_CACHE_DIR": str(blocked / "cache")})
    assert out.returncode == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert "skipped: 2 file(s), 1 question(s)" in out.stderr
    assert "dated.md:2: " in out.stderr and "not a valid date" in out.stderr
    assert f"{questions}:line 5 (gold): duplicate id 'gold': line 1" in out.stderr
    assert "cannot be written" in out.stderr  # the read-only cache: one warning, no crash
    assert "4 answerable questions" in out.stdout
    assert {r["n_queries"] for r in read_rows(results)} == {4}


@pytest.mark.parametrize("tool", [("bench", "chunk-speed"), ("bench", "code", "--smoke")])
def test_a_tool_without_its_benchmark_files_exits_3_with_one_line(tmp_path, tool):
    """`ragkit bench ...` offline with no benchmark folder: the loader's message on one line
    (it names RAGKIT_BENCHMARKS_DIR), not a traceback, and no results file is started."""
    (tmp_path / "empty").mkdir()
    out = run(*tool, env_extra={"RAGKIT_BENCHMARKS_DIR": str(tmp_path / "empty"),
                                "RAGKIT_RESULTS_DIR": str(tmp_path / "results")})
    assert out.returncode == 3, out.stderr
    assert "Traceback" not in out.stderr and "RAGKIT_BENCHMARKS_DIR" in out.stderr
    assert out.stderr.startswith(f"ragkit {tool[0]}: benchmark file ")
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not list((tmp_path / "results").glob("*.jsonl"))


# ------------------------------------------------------------------ issue 36: folder contents


def test_an_empty_corpus_path_is_a_usage_error_not_the_current_folder(tmp_path):
    (tmp_path / "q.jsonl").write_text('{"id": "1", "question": "?", "evidence": '
                                      '[{"quote": "text"}]}\n')
    for command in (["eval", "--golden", str(tmp_path / "q.jsonl")],
                    ["show", "--golden", str(tmp_path / "q.jsonl"), "--question", "1"]):
        out = run(*command, "--corpus", "", "--results" if command[0] == "eval" else "--k",
                  str(tmp_path / "rows.jsonl") if command[0] == "eval" else "2")
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr and "--corpus" in out.stderr
        assert "empty" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    out = run("chunk", "")
    assert out.returncode == 2 and "empty" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "rows.jsonl").exists()


def test_a_strategy_named_twice_runs_once_with_a_warning(capsys):
    from ragkit.tools.cli import parse_strategies

    got = parse_strategies("fixed_chars:1000/200, fixed_chars:1000/200,recursive:250/0")
    assert [c.label for c in got] == ["fixed_chars(1000/200)", "recursive(250/0,cl100k_base)"]
    err = capsys.readouterr().err
    assert "fixed_chars:1000/200" in err and "twice" in err and "once" in err


def test_chunk_names_the_readme_hidden_backup_and_linked_files_it_left_out(tmp_path):
    d = tmp_path / "docs"
    (d / ".ipynb_checkpoints").mkdir(parents=True)
    (d / "a.md").write_bytes(b"---\ndoc_id: a\n---\n# A\n\nnew text\n")
    (d / ".ipynb_checkpoints" / "a-checkpoint.md").write_bytes(
        b"---\ndoc_id: a\n---\n# A\n\nstale\n")
    (d / "a.md.bak").write_bytes(b"# A\n\nold\n")
    (d / "README.md").write_bytes(b"# Notes\n\nabout\n")
    os.symlink("a.md", d / "copy.md")
    out = run("chunk", str(d), "--strategy", "recursive:40/0", "--limit", "50")
    assert out.returncode == 0, out.stderr
    assert "stale" not in out.stdout and "new text" in out.stdout
    assert "a[" in out.stdout and "copy[" not in out.stdout
    assert "README.md" in out.stdout
    assert "2 hidden/backup file(s) excluded" in out.stdout and "--include-hidden" in out.stdout
    assert "copy.md" in out.stdout and "duplicate" in out.stdout
    out = run("chunk", str(d), "--strategy", "recursive:40/0", "--limit", "50",
              "--include-hidden")
    assert out.returncode == 1, out.stderr  # the checkpoint's doc_id 'a' clashes: reported
    assert "doc_id 'a' is already used" in out.stderr


# ------------------------------------------------------ issue 36: files destroyed or rewritten


def _refused(out, *paths):
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    for p in paths:
        assert str(p) in out.stderr, (p, out.stderr)


@pytest.mark.parametrize("how", ["same", "dot-slash", "symlink", "hardlink"])
def test_chunk_refuses_to_write_its_output_over_its_input(tmp_path, how):
    doc = tmp_path / "x.md"
    doc.write_text(MARKDOWN, encoding="utf-8")
    before = doc.read_bytes()
    target = {"same": str(doc), "dot-slash": "./x.md", "symlink": str(tmp_path / "l.md"),
              "hardlink": str(tmp_path / "h.md")}[how]
    if how == "symlink":
        os.symlink("x.md", tmp_path / "l.md")
    if how == "hardlink":
        os.link(doc, tmp_path / "h.md")
    out = subprocess.run([sys.executable, "-m", "ragkit", "chunk", "x.md", "--out", target],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600,
                         env={**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    _refused(out, target, "x.md")
    assert doc.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        {"x.md", *({"l.md"} if how == "symlink" else ()), *({"h.md"} if how == "hardlink"
                                                           else ())})


def test_chunk_of_a_folder_refuses_an_output_that_is_one_of_its_documents(corpus):
    docs, _ = corpus
    before = (docs / "refunds.md").read_bytes()
    out = run("chunk", str(docs), "--out", str(docs / "refunds.md"))
    _refused(out, docs / "refunds.md")
    assert (docs / "refunds.md").read_bytes() == before


def test_golden_refuses_to_write_over_the_questions_it_reads(corpus):
    docs, questions = corpus
    (docs / "broken.md").unlink()  # the corpus loads: only OUT stops it
    before = questions.read_bytes()
    out = run("golden", str(docs), str(questions), str(questions))
    _refused(out, questions)
    assert questions.read_bytes() == before


@pytest.mark.parametrize("which", ["golden", "document"])
def test_eval_refuses_results_that_are_an_input(corpus, which):
    docs, questions = corpus
    target = questions if which == "golden" else docs / "refunds.md"
    before = target.read_bytes()
    out = run("eval", "--corpus", str(docs), "--golden", str(questions), "--results",
              str(target))
    _refused(out, target)
    assert target.read_bytes() == before


def test_eval_with_a_strategy_named_twice_appends_its_rows_once(corpus, tmp_path):
    docs, questions = corpus
    results = tmp_path / "rows.jsonl"
    out = run("eval", "--corpus", str(docs), "--golden", str(questions), "--strategies",
              "recursive:60/0,recursive:60", "--k", "2", "--results", str(results))
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "'recursive:60' is named twice" in out.stderr
    rows = read_rows(results)
    per_metric = [r for r in rows if r["metric"] == "recall"]
    assert [r["strategy"] for r in per_metric] == ["recursive(60/0,cl100k_base)"]


def test_baselines_in_strategies_names_every_simple_baseline_once(capsys):
    from ragkit.chunkers import simple_baselines
    from ragkit.tools.cli import parse_strategies

    got = parse_strategies("baselines,router")
    assert [c.label for c in got] == [c.label for c in simple_baselines()] + ["router"]
    again = parse_strategies("fixed_chars:250/0,baselines")  # 250/0 is one of them
    assert [c.label for c in again] == [c.label for c in simple_baselines()]
    assert "named twice" in capsys.readouterr().err
