"""The Anthropic generator through the official SDK, offline: a stub transport answers (the
SDK's own `http_client` hook), so the request, the retries, the usage accounting and the rule
that the API key never reaches logs, files or exceptions are checked without a network."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import traceback

import pytest

from ragkit import contextualize as ctx
from ragkit.contextualize import AnthropicContextualizer, contextualize
from ragkit.types import Document

anthropic = pytest.importorskip("anthropic", reason="the `api` extra (anthropic SDK)")
# the HTTP library the pinned SDK is built on (httpx2, a fork of httpx with its MockTransport)
httpx = pytest.importorskip("httpx2")

FAKE_KEY = "sk-ant-test-FAKE-123"
DOC_TEXT = ("# Refund Policy\n\nThis policy explains when Northwind Cloud returns money to a "
            "Suite customer.\n\n## Annual plans\n\nAnnual plans can be cancelled within 30 days "
            "for a full refund.\n\n## Monthly plans\n\nMonthly plans are never refunded.\n")


def _doc() -> Document:
    return Document(id="refund", text=DOC_TEXT, metadata={"title": "Refund Policy"})


def _chunks(doc):
    from ragkit.chunkers import StructureChunker

    return StructureChunker(soft=20, hard=60).chunk(doc)


def _message(n: int, stop: str = "end_turn") -> dict:
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [{"type": "text", "text": f"Section {n} of the refund policy."}],
            "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 40, "output_tokens": 12,
                      "cache_creation_input_tokens": 0 if n > 1 else 3000,
                      "cache_read_input_tokens": 3000 if n > 1 else 0}}


def _client(handler):
    return httpx.Client(transport=httpx.MockTransport(handler))


RETRY_NOW = {"retry-after-ms": "1"}  # the SDK honours it: retries without a real wait


def test_request_usage_and_the_key_nowhere(tmp_path, monkeypatch, capsys, caplog):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("RAGKIT_DATA_DIR", str(tmp_path / "data"))
    sent = []

    def handler(request):
        sent.append((dict(request.headers), json.loads(request.content)))
        return httpx.Response(200, json=_message(len(sent)))

    caplog.set_level(logging.DEBUG)
    doc = _doc()
    gen = AnthropicContextualizer(budget=80, http_client=_client(handler))
    assert AnthropicContextualizer.available()
    cache = ctx.preamble_cache("course", gen)
    out = contextualize([doc], _chunks(doc), gen, cache=cache)
    cache.rewrite()
    print(gen.usage_line(), gen.settings(), vars(gen), [c.metadata for c in out])
    from ragkit.report import Recorder

    rec = Recorder("bench_context")
    rec.add(experiment="t", benchmark="course", strategy="anthropic", metric="cost_usd",
            value=gen.cost_usd(), params=gen.settings())
    results = rec.save()
    n = len(out)
    assert len(sent) == n >= 2
    # the request: the key in its header only, the document first and marked for caching
    headers, body = sent[0]
    auth = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
    assert auth == FAKE_KEY and "anthropic-version" in headers
    assert all(FAKE_KEY not in v for k, v in headers.items() if k not in ("x-api-key",
                                                                         "authorization"))
    assert FAKE_KEY not in json.dumps(body)
    first, second = body["messages"][0]["content"]
    assert first["cache_control"] == {"type": "ephemeral"} and DOC_TEXT in first["text"]
    assert "<chunk>" in second["text"] and body["max_tokens"] == 80
    # usage accounting and its price
    assert gen.stats["cache_read_input_tokens"] == 3000 * (n - 1)
    assert gen.stats["cache_creation_input_tokens"] == 3000
    assert gen.cost_usd() == pytest.approx(
        (40 * n * 0.8 + 3000 * 1.0 + 3000 * (n - 1) * 0.08 + 12 * n * 4) / 1e6)
    # the key is nowhere: not printed, logged, cached, recorded or kept on the generator
    captured = capsys.readouterr()
    assert FAKE_KEY not in captured.out + captured.err
    assert FAKE_KEY not in caplog.text
    assert FAKE_KEY not in repr(vars(gen))
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert FAKE_KEY.encode() not in f.read_bytes(), f
    assert results.exists() and cache.path.exists()


def test_overloaded_and_server_errors_are_retried(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    statuses = [529, 500, 200]
    calls = []

    def handler(request):
        calls.append(1)
        status = statuses[len(calls) - 1]
        if status != 200:
            return httpx.Response(status, headers=RETRY_NOW, json={"type": "error", "error": {
                "type": "overloaded_error", "message": "busy"}})
        return httpx.Response(200, json=_message(1, stop="max_tokens"))

    doc = _doc()
    gen = AnthropicContextualizer(retries=2, http_client=_client(handler))
    p = gen.generate(doc, _chunks(doc)[0])
    assert len(calls) == 3
    assert p.text == "Section 1 of the refund policy." and p.flags == ("cut",)


def test_retries_run_out_with_a_clear_error(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    calls = []

    def handler(request):
        calls.append(1)
        return httpx.Response(503, headers=RETRY_NOW, json={"error": {"message": "down"}})

    doc = _doc()
    gen = AnthropicContextualizer(retries=1, http_client=_client(handler))
    with pytest.raises(RuntimeError, match="503"):
        gen.generate(doc, _chunks(doc)[0])
    assert len(calls) == 2  # the first try and one retry


def test_errors_are_redacted_everywhere_in_the_exception(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)

    def handler(request):  # an error that echoes the key back
        return httpx.Response(401, json={"type": "error", "error": {
            "type": "authentication_error", "message": f"bad key {FAKE_KEY}"}})

    gen = AnthropicContextualizer(retries=0, http_client=_client(handler))
    doc = _doc()
    with pytest.raises(RuntimeError) as e:
        gen.generate(doc, _chunks(doc)[0])
    assert "401" in str(e.value)
    text = "".join(traceback.format_exception(e.value))
    chain, err = [], e.value
    while err is not None:
        chain.append(repr(err) + str(getattr(err, "body", "")))
        err = err.__cause__ or err.__context__
    assert FAKE_KEY not in text and FAKE_KEY not in "".join(chain)


def test_unreachable_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)

    def handler(request):
        raise httpx.ConnectError("no route to host")

    gen = AnthropicContextualizer(retries=0, http_client=_client(handler))
    doc = _doc()
    with pytest.raises(RuntimeError, match="unreachable"):
        gen.generate(doc, _chunks(doc)[0])


def test_needs_a_key(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert not AnthropicContextualizer.available()
    doc = _doc()
    with pytest.raises(RuntimeError, match="ANTHROPIC_API_KEY"):
        AnthropicContextualizer().generate(doc, _chunks(doc)[0])


def test_without_the_sdk_the_library_imports_and_the_error_says_what_to_install(monkeypatch):
    code = ("import sys; sys.modules['anthropic'] = None\n"
            "import ragkit.contextualize as c\n"
            "assert 'anthropic' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
            "import os; os.environ['ANTHROPIC_API_KEY'] = 'k'\n"
            "from ragkit.types import Document\n"
            "d = Document('d', 'Some text.')\n"
            "from ragkit.chunkers import RecursiveChunker\n"
            "try:\n"
            "    c.AnthropicContextualizer().generate(d, RecursiveChunker().chunk(d)[0])\n"
            "except ImportError as e:\n"
            "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert "ragkit[api]" in out
