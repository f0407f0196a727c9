"""`ragkit preambles`: a cache file only with content in it, and one line (not a traceback) when
the generator cannot run: no key, an API that cannot be reached, a budget of 0."""

import pytest

from ragkit.cache import JsonlCache
from ragkit.tools import cli

FAKE_KEY = "sk-ant-test-FAKE-456"
DOC = ("# Refund Policy\n\nAnnual plans can be cancelled within 30 days for a full refund.\n\n"
       "## Monthly plans\n\nMonthly plans are never refunded.\n")


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A one-document 'course' set, and the folder its caches go to."""
    from ragkit.chunkers import StructureChunker
    from ragkit.types import Document

    doc = Document(id="refund", text=DOC, metadata={"title": "Refund Policy"})
    chunks = StructureChunker(soft=20, hard=60).chunk(doc)
    monkeypatch.setattr("ragkit.tools.preambles.corpus_and_chunks", lambda b: ([doc], chunks))
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("RAGKIT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return tmp_path / "data" / "cache" / "preambles"


def _run(args):
    """`ragkit ARGS...` in this process: its exit code (argparse's own exit included)."""
    try:
        return cli.main(args)
    except SystemExit as e:
        return e.code


def _files(folder):
    return sorted(p.name for p in folder.rglob("*")) if folder.exists() else []


def _one_line(capsys, *words):
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert "Traceback" not in out.err + out.out
    assert len(lines) == 1 and all(w in lines[0] for w in words), out.err
    return lines[0]


def test_no_key_is_one_line_and_writes_nothing(course, capsys):
    code = cli.main(["preambles", "--benchmark", "course", "--generator", "anthropic"])
    assert code == 3
    _one_line(capsys, "ragkit preambles:", "set ANTHROPIC_API_KEY", "nothing written")
    assert _files(course) == []


def test_an_unreachable_api_is_one_line_and_writes_nothing(course, capsys, monkeypatch):
    httpx = pytest.importorskip("httpx2")
    import ragkit.contextualize as ctx

    def handler(request):
        raise httpx.ConnectError("no route to host")

    real = ctx.make_contextualizer
    monkeypatch.setattr(ctx, "make_contextualizer", lambda name, budget: real(
        name, budget, retries=0, http_client=httpx.Client(transport=httpx.MockTransport(handler))))
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    code = cli.main(["preambles", "--benchmark", "course", "--generator", "anthropic"])
    assert code == 3
    line = _one_line(capsys, "could not be reached", "nothing written")
    assert FAKE_KEY not in line
    assert _files(course) == []


def test_a_failed_run_leaves_an_existing_cache_as_it_was(course, capsys):
    c = JsonlCache(course / "course-anthropic.jsonl")
    c.put({"key": "z", "preamble": "last"})
    c.put({"key": "a", "preamble": "first"})  # unsorted: a rewrite would change the file
    before = c.path.read_bytes()
    assert cli.main(["preambles", "--benchmark", "course", "--generator", "anthropic"]) == 3
    capsys.readouterr()
    assert c.path.read_bytes() == before


@pytest.mark.parametrize("budget", ["0", "-5", "many"])
def test_a_budget_below_one_is_a_usage_error(course, capsys, budget):
    code = _run(["preambles", "--benchmark", "course", "--generator", "structural",
                 "--budget", budget])
    assert code == 2
    _one_line(capsys, "--budget")
    assert _files(course) == []


def test_a_run_with_content_writes_its_cache(course, capsys):
    assert cli.main(["preambles", "--benchmark", "course", "--generator", "structural"]) == 0
    [name] = _files(course)
    assert JsonlCache(course / name).load() and not name.startswith(".")


def test_an_empty_rewrite_creates_no_file(tmp_path):
    c = JsonlCache(tmp_path / "sub" / "empty.jsonl")
    c.rewrite([])
    assert not c.path.exists() and not (tmp_path / "sub").exists()
