"""Every RAGKIT_* variable is read by ragkit.config.get_settings, and only there."""

import ast
from pathlib import Path

import pytest

from ragkit.config import PROJECT_ROOT, get_settings

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

    documented = {w.strip("`") for w in ragkit.config.__doc__.split() if w.startswith("``RAGKIT_") and "*" not in w}
    assert documented == set(CASES)


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
