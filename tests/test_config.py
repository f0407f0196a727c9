"""Every RAGKIT_* variable is read by ragkit.config.get_settings, and only there."""

import ast
from pathlib import Path

import pytest

import ragkit

TREE = str(Path(ragkit.__file__).parents[1])  # the ragkit under test

from ragkit.config import PROJECT_ROOT, get_settings  # noqa: E402

# variable -> (value set, Settings field, expected value)
CASES = {
    "RAGKIT_PROFILE": ("smoke", "profile", "smoke"),
    "RAGKIT_SEED": ("7", "seed", 7),
    "RAGKIT_DEVICE": ("cuda:1", "device", "cuda:1"),
    "RAGKIT_CACHE_DIR": ("/tmp/c", "cache_dir", Path("/tmp/c")),
    "RAGKIT_RESULTS_DIR": ("/tmp/r", "results_dir", Path("/tmp/r")),
    "RAGKIT_DATA_DIR": ("/tmp/d", "data_dir", Path("/tmp/d")),
    "RAGKIT_BENCHMARKS_DIR": ("/tmp/b", "benchmarks_dir", Path("/tmp/b")),
    "RAGKIT_EMBEDDER": ("some/model", "embedder", "some/model"),
    "RAGKIT_EMBED_BACKEND": ("ONNX", "embed_backend", "onnx"),
    "RAGKIT_EMBED_PRECISION": ("BF16", "embed_precision", "bf16"),
    "RAGKIT_GEMMA_DIR": ("/tmp/g", "gemma_dir", Path("/tmp/g")),
    "RAGKIT_RERANK_MODEL": ("cross/enc", "rerank_model", "cross/enc"),
    "RAGKIT_REGENERATE_PREAMBLES": ("yes", "regenerate_preambles", True),
    "RAGKIT_REGENERATE_ANSWERS": ("1", "regenerate_answers", True),
    "RAGKIT_JUDGE_MODEL": ("judge-x", "judge_model", "judge-x"),
    "RAGKIT_JUDGE_EMBEDDINGS": ("emb-x", "judge_embeddings", "emb-x"),
    "RAGKIT_BYOD_CORPUS": ("/tmp/corpus", "byod_corpus", Path("/tmp/corpus")),
    "RAGKIT_BYOD_GOLDEN": ("/tmp/q.jsonl", "byod_golden", Path("/tmp/q.jsonl")),
    "RAGKIT_BYOD_STRATEGIES": ("fixed_chars:100/0", "byod_strategies", "fixed_chars:100/0"),
    "RAGKIT_HYPOTHESIS_EXAMPLES": ("12", "hypothesis_examples", 12),
    "RAGKIT_BIG_LINE_MB": ("2.5", "big_line_mb", 2.5),
}


def _clear(monkeypatch):
    for name in CASES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_variable_sets_its_field(monkeypatch, name):
    _clear(monkeypatch)
    before = get_settings()
    value, field, expected = CASES[name]
    monkeypatch.setenv(name, value)
    after = get_settings()
    assert getattr(after, field) == expected
    assert getattr(before, field) != expected  # the default differs, so the variable did it


def test_defaults(monkeypatch):
    _clear(monkeypatch)
    s = get_settings()
    assert (s.profile, s.seed, s.device, s.embed_backend) == ("full", 13, "auto", "auto")
    assert s.gemma_dir is None and s.rerank_model is None and s.benchmarks_dir is None
    assert not s.regenerate_preambles and not s.regenerate_answers
    assert s.byod_corpus == s.data_dir / "corpus"


@pytest.mark.parametrize("name,value", [("RAGKIT_PROFILE", "huge"), ("RAGKIT_SEED", "x"),
                                        ("RAGKIT_DEVICE", "tpu"), ("RAGKIT_EMBED_BACKEND", "jax"),
                                        ("RAGKIT_BIG_LINE_MB", "many")])
def test_bad_values_name_the_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        get_settings()


def test_every_documented_variable_is_tested():
    import ragkit.config

    documented = {w.strip("`") for w in ragkit.config.__doc__.split()
                  if w.startswith("``RAGKIT_") and "*" not in w}
    assert documented == set(CASES) | {"RAGKIT_RUNNING_KERNELS"}  # not a field: see below


def test_running_kernels_is_read_from_its_file_at_each_call(tmp_path, monkeypatch):
    from ragkit.config import RUNNING_KERNELS, running_kernels

    monkeypatch.delenv(RUNNING_KERNELS, raising=False)
    assert running_kernels() is None
    path = tmp_path / "running"
    monkeypatch.setenv(RUNNING_KERNELS, str(path))
    assert running_kernels() is None  # no file yet
    path.write_text("2\n")
    assert running_kernels() == 2
    path.write_text("1")
    assert running_kernels() == 1  # not cached: the runner rewrites it as kernels finish
    path.write_text("")
    assert running_kernels() is None  # unreadable: as if unset


def _environ_reads(tree: ast.AST):
    """RAGKIT_* names read with os.environ.get / os.getenv / os.environ[...] (loads only)."""
    for node in ast.walk(tree):
        arg = None
        if isinstance(node, ast.Call) and node.args:
            f = ast.unparse(node.func)
            if f in ("os.environ.get", "os.getenv", "environ.get", "getenv"):
                arg = node.args[0]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if ast.unparse(node.value) in ("os.environ", "environ"):
                arg = node.slice
        if isinstance(arg, ast.Constant) and str(arg.value).startswith("RAGKIT_"):
            yield node.lineno, arg.value


def test_no_ragkit_variable_read_outside_config():
    files = [p for folder in ("ragkit", "notebooks", "tests")
             for p in (PROJECT_ROOT / folder).rglob("*.py")]
    found = [f"{p.relative_to(PROJECT_ROOT)}:{line} {name}" for p in files
             if p.name != "config.py"
             for line, name in _environ_reads(ast.parse(p.read_text(), str(p)))]
    assert not found


# -- bad values through the real command: one line naming the variable, exit 2 -------------------
# variable -> a value ragkit cannot use (each would otherwise be a traceback, a silent default
# or a later, unrelated error)
BAD = {
    "RAGKIT_SEED": "abc",
    "RAGKIT_PROFILE": "huge",
    "RAGKIT_EMBED_BACKEND": "jax",
    "RAGKIT_EMBED_PRECISION": "fp8",
    "RAGKIT_DEVICE": "cuda:x",
    "RAGKIT_REGENERATE_PREAMBLES": "maybe",
    "RAGKIT_REGENERATE_ANSWERS": "2",
    "RAGKIT_HYPOTHESIS_EXAMPLES": "0",
    "RAGKIT_BIG_LINE_MB": "nan",
    "RAGKIT_DATA_DIR": "/no/such/ragkit-data",
    "RAGKIT_GEMMA_DIR": "/no/such/ragkit-gemma",
    "RAGKIT_BYOD_CORPUS": "/no/such/ragkit-corpus",
    "RAGKIT_BYOD_GOLDEN": "/no/such/ragkit-questions.jsonl",
    "RAGKIT_EMBEDDER": "./no-such-ragkit-model",
    "RAGKIT_RERANK_MODEL": "/no/such/ragkit-reranker",
}


def _ragkit(args, env=None, cwd=None):
    import os
    import subprocess
    import sys

    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAGKIT_")}
    return subprocess.run([sys.executable, "-m", "ragkit", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd,
                          env={**clean, "PYTHONPATH": TREE, **(env or {})})


def _one_line_naming(proc, name, value):
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert len(lines) == 1 and name in lines[0] and value in lines[0], proc.stderr


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_variable_is_one_line_and_exit_2(name, tmp_path):
    """Before any work: `ragkit eval` (on inputs that are not there: the variable comes first)."""
    proc = _ragkit(["eval", "--corpus", str(tmp_path / "nope"), "--golden",
                    str(tmp_path / "nope.jsonl")], {name: BAD[name]})
    _one_line_naming(proc, name, BAD[name])


def test_the_message_gives_the_allowed_values(monkeypatch):
    monkeypatch.setenv("RAGKIT_SEED", "-1")
    with pytest.raises(ValueError, match=r"RAGKIT_SEED='-1' is not valid: expected a whole "
                                         r"number from 0 to 4294967295 \(default 13\)"):
        get_settings()
    monkeypatch.setenv("RAGKIT_SEED", "5")
    monkeypatch.setenv("RAGKIT_PROFILE", "Huge")
    with pytest.raises(ValueError, match="RAGKIT_PROFILE='huge' is not valid: expected full or "
                                         "smoke"):
        get_settings()


@pytest.mark.parametrize("value,expected", [("", False), (" 0 ", False), ("no", False),
                                            ("YES", True), ("1", True)])
def test_flags_take_on_and_off_values(monkeypatch, value, expected):
    monkeypatch.setenv("RAGKIT_REGENERATE_ANSWERS", value)
    assert get_settings().regenerate_answers is expected


def test_paths_that_exist_and_hub_ids_pass_the_check(monkeypatch, tmp_path):
    from ragkit.environment import check_environment

    monkeypatch.setenv("RAGKIT_GEMMA_DIR", str(tmp_path))
    monkeypatch.setenv("RAGKIT_EMBEDDER", "BAAI/bge-small-en-v1.5")  # a hub id: not a path
    monkeypatch.setenv("RAGKIT_RERANK_MODEL", "packaged")
    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "not-yet"))  # made on demand
    assert check_environment().gemma_dir == tmp_path
    (tmp_path / "a-file").write_text("x")
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path / "a-file"))
    with pytest.raises(ValueError, match="RAGKIT_RESULTS_DIR=.*exists and is not a folder"):
        check_environment()


def _tool_args(tmp_path):
    """Each `ragkit` subcommand with arguments it would accept and act on."""
    doc = tmp_path / "doc.md"
    doc.write_text("# A\n\nsome text\n")
    for d in ("a", "b"):
        (tmp_path / d).mkdir(exist_ok=True)
    return {
        "chunk": ["chunk", str(doc)],
        "eval": ["eval", "--corpus", str(tmp_path), "--golden", str(tmp_path / "q.jsonl")],
        "show": ["show", "--corpus", str(tmp_path), "--golden", str(tmp_path / "q.jsonl"),
                 "--question", "1"],
        "preambles": ["preambles", "--benchmark", "course", "--generator", "structural"],
        "smoke-diff": ["smoke-diff", str(tmp_path / "a"), str(tmp_path / "b")],
        "robustness": ["robustness", "--areas", "caches", "--quick"],
        "golden": ["golden", "--help"],
        "bench": ["bench", "--help"],
        "index": ["index", "--help"],
        "readme": ["readme", "--help"],
        "reproduce": ["reproduce", "--help"],
    }


@pytest.mark.parametrize("command", ["chunk", "eval", "show", "preambles", "smoke-diff",
                                     "robustness", "golden", "bench", "index", "readme",
                                     "reproduce"])
def test_every_subcommand_checks_the_environment_first(command, tmp_path):
    proc = _ragkit(_tool_args(tmp_path)[command], {"RAGKIT_SEED": "abc"})
    _one_line_naming(proc, "RAGKIT_SEED", "abc")


def test_the_offline_setup_has_one_home(monkeypatch):
    """Issue 33: `ragkit.environment.offline_defaults` is the one place the offline variables
    are set (the command, every tool, reproduce and these tests call it); a reader's own
    value wins."""
    import os
    import re
    from pathlib import Path

    import ragkit
    from ragkit.environment import OFFLINE_DEFAULTS, offline_defaults

    for name in OFFLINE_DEFAULTS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    offline_defaults()
    assert os.environ["HF_HUB_OFFLINE"] == "0" and os.environ["RAGAS_DO_NOT_TRACK"] == "true"
    package = Path(ragkit.__file__).parent
    setters = re.compile(r"environ(?:\.setdefault\(|\[)\s*[\"'](?:%s)" % "|".join(OFFLINE_DEFAULTS))
    found = [str(p.relative_to(package)) for p in package.rglob("*.py")
             if setters.search(p.read_text(encoding="utf-8"))]
    assert found == [], found
    callers = {str(p.relative_to(package)) for p in package.rglob("*.py")
               if "offline_defaults()" in p.read_text(encoding="utf-8")}
    assert {"tools/cli.py", "tools/common.py", "tools/reproduce.py"} <= callers


def test_the_environment_report_requires_every_baselines_library_and_says_why_one_is_optional():
    from ragkit.chunkers import simple_baselines
    from ragkit.environment import environment_report

    report = environment_report().set_index("package")
    # two of the seven baselines are other libraries' chunkers: the course cannot run without them
    assert {"langchain-text-splitters", "chonkie"} <= set(report.index[report.required])
    assert len(simple_baselines()) == 7
    optional = report[~report.required]
    assert "onnxruntime" in optional.index and (optional.role.str.len() > 10).all()
    assert (report[report.required].role == "").all()
