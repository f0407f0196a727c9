"""Late chunking (`ragkit.embed.late`) with the real bundled MiniLM: token bookkeeping, equality with
the ordinary embedding, long documents, 1 and 10,000 chunks, and the shared query space."""

import random
import re

import numpy as np
import pytest

from ragkit.config import get_settings
from ragkit.embed import LateChunkingWarning, LateEmbedder
from ragkit.embed.late_plan import chunk_token_ranges, plan_windows, tokenize_document
from ragkit.retrieve import LateDenseRetriever
from ragkit.types import Chunk, Document

REFUNDS = ("Refund policy. Gold members can ask for a full refund within 14 days of purchase. "
           "After that, refunds are prorated and paid back to the original card.")
RETENTION = ("Data retention. Customer records are kept for seven years and then deleted. "
             "Backups are purged on a rolling 35-day schedule.")


def _sentences(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"[^.!?\s][^.!?]*[.!?]?", text)]


def _words(n: int, seed: int = 13) -> str:
    """A deterministic text of n words, one sentence per 12 words."""
    vocab = ("refund window days purchase members invoice prorated card account retention "
             "records backups deleted schedule encryption gateway firmware throughput "
             "reimbursement interoperability authentication latency").split()
    rng = random.Random(seed)
    words = [rng.choice(vocab) + ("." if i % 12 == 11 else "") for i in range(n)]
    return " ".join(words)


@pytest.fixture(scope="module")
def late(embedder):
    return LateEmbedder(embedder, cache=False)


def _doc_chunks(doc: Document, spans) -> list[Chunk]:
    return [Chunk.make(doc, s, e, "test") for s, e in spans]


# -- windows and token ranges (pure bookkeeping) --------------------------------------------

@pytest.mark.parametrize("n,window,overlap", [(10, 6, 2), (1000, 254, 63), (999, 100, 0),
                                              (500, 100, 80), (50, 100, 25), (101, 100, 1)])
def test_windows_supply_each_token_once_from_its_best_window(n, window, overlap):
    wins, supplied = plan_windows(n, window, overlap)
    assert supplied[0, 0] == 0 and supplied[-1, 1] == n
    assert np.all(supplied[1:, 0] == supplied[:-1, 1])          # a partition of [0, n)
    assert np.all(wins[:, 1] - wins[:, 0] == min(n, window))    # every window full
    for t in range(n):  # brute force: the supplying window leaves t the most context
        def context(a, b):
            return min(t - a if a > 0 else n, b - 1 - t if b < n else n)
        best = max(context(a, b) for a, b in wins if a <= t < b)
        k = int(np.searchsorted(supplied[:, 1], t, "right"))
        assert wins[k, 0] <= t < wins[k, 1] and context(*wins[k]) == best


def test_token_ranges_partition_the_documents_tokens(late):
    text = " ".join([REFUNDS, RETENTION] * 6)
    tok = late.tokenize(text)
    for spans in (_sentences(text),                                       # whitespace gaps
                  [(i, min(i + 37, len(text))) for i in range(0, len(text), 37)]):  # mid-word
        r = chunk_token_ranges(text, tok.starts, tok.ends, spans)
        assert r.lo[0] == 0 and r.hi[-1] == len(tok)
        assert np.all(r.hi > r.lo) and np.all(r.lo[1:] == r.hi[:-1])   # none dropped, none shared
        for (s, e), lo, hi in zip(spans, r.lo, r.hi):  # each token starts inside its chunk
            assert np.all((tok.starts[lo:hi] >= s) & (tok.starts[lo:hi] < e))
    overlapping = [(i, min(i + 200, len(text))) for i in range(0, len(text), 100)]
    r = chunk_token_ranges(text, tok.starts, tok.ends, overlapping)
    covered = np.zeros(len(tok), int)
    for lo, hi in zip(r.lo, r.hi):
        covered[lo:hi] += 1
    assert covered.min() >= 1 and covered.max() == 2


def test_gap_tokens_and_tokenless_chunks_follow_the_documented_rules():
    # SentencePiece-style tokens: "Hello" "▁world" "\n\n" "Bye" over "Hello world\n\nBye"
    text = "Hello world\n\nBye"
    starts, ends = np.array([0, 5, 11, 13]), np.array([5, 11, 13, 16])
    r = chunk_token_ranges(text, starts, ends, [(0, 5), (6, 11), (13, 16)])
    # "▁world" starts on the gap's space but runs into chunk 2; "\n\n" is nearer chunk 2's end
    assert r.lo.tolist() == [0, 1, 3] and r.hi.tolist() == [1, 3, 4] and r.gap_tokens == 2
    r = chunk_token_ranges(text, starts, ends, [(0, 16), (2, 3)])  # (2, 3) is inside "Hello"
    assert r.borrowed == 1 and (r.lo[1], r.hi[1]) == (0, 1)
    r = chunk_token_ranges(text, starts, ends, [(13, 16)])  # "Hello world" is in no chunk
    assert (r.lo[0], r.hi[0]) == (0, 4) and r.uncovered_chars == 10


def test_a_slow_tokenizer_is_refused():
    class Slow:
        is_fast = False

    with pytest.raises(TypeError, match="fast"):
        tokenize_document(Slow(), "text")


# -- vectors --------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["Hello world.", REFUNDS, " ".join([REFUNDS, RETENTION] * 4)])
def test_one_chunk_document_equals_its_ordinary_embedding(late, embedder, text):
    # specials="edges": [CLS] and [SEP] are pooled into the first and last chunk, as
    # sentence-transformers' mean pooling does, so one chunk == the ordinary embedding
    v = late.embed_document(text, [(0, len(text))])
    ref = embedder.encode([text])
    assert float(v[0] @ ref[0]) > 0.99999
    excl = LateEmbedder(embedder, specials="exclude", cache=False)
    cos = float(excl.embed_document(text, [(0, len(text))])[0] @ ref[0])
    assert cos > (0.999 if len(text) > 300 else 0.9)  # text tokens only: close, not equal


def test_single_window_equals_a_direct_forward_pass(late, embedder):
    import torch

    text = " ".join([REFUNDS, RETENTION] * 3)
    spans = _sentences(text)
    tok = embedder.tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
    offsets = tok.pop("offset_mapping")[0]
    with torch.inference_mode():
        states = embedder.model[0].auto_model(**tok).last_hidden_state[0]
    n = len(states)
    ref = []
    for i, (s, e) in enumerate(spans):  # BERT tokens never start on whitespace
        rows = [t for t in range(1, n - 1) if s <= offsets[t, 0] < e]
        rows = ([0] if i == 0 else []) + rows + ([n - 1] if i == len(spans) - 1 else [])
        v = states[rows].mean(0).numpy()
        ref.append(v / np.linalg.norm(v))
    got = late.embed_document(text, spans)
    np.testing.assert_allclose(got, np.stack(ref), atol=1e-5)
    window = len(late.tokenize(text))  # an explicit window that holds the whole document
    exact = LateEmbedder(embedder, window=window, overlap=0, cache=False)
    np.testing.assert_allclose(exact.embed_document(text, spans), got, atol=1e-5)
    small = LateEmbedder(embedder, window=48, overlap=16, cache=False)
    with pytest.warns(LateChunkingWarning, match="windows"):
        windowed = small.embed_document(text, spans)
    assert windowed.shape == got.shape and small.flags == ["late:windowed_docs:1"]
    assert float(np.mean(np.sum(windowed * got, axis=1))) > 0.9  # less context, same meaning


def test_one_chunk_and_ten_thousand_chunks_on_a_long_document(late, embedder):
    short = Document("short", REFUNDS)
    long_text = _words(10_000)
    long = Document("long", long_text)
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", long_text)]
    assert len(spans) == 10_000
    tok = late.tokenize(long_text)
    assert len(tok) > 60 * embedder.max_tokens  # far longer than one window
    r = chunk_token_ranges(long_text, tok.starts, tok.ends, spans)  # timed by `ragkit bench late`
    assert r.lo[0] == 0 and r.hi[-1] == len(tok) and np.all(r.lo[1:] == r.hi[:-1])
    chunks = [Chunk.make(short, 0, len(REFUNDS), "one"), *_doc_chunks(long, spans)]
    with pytest.warns(LateChunkingWarning, match="windows"):
        vecs = late.embed([short, long], chunks)
    assert vecs.shape == (10_001, embedder.dimension)
    assert np.all(np.isfinite(vecs))
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    # batched with a long document's windows (padding), the short one is unchanged
    assert float(vecs[0] @ embedder.encode([REFUNDS])[0]) > 0.99999
    assert late.flags == ["late:windowed_docs:1"] and late.stats["documents"] == 2


def test_late_chunk_vectors_share_the_query_space(embedder, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path))
    docs = [Document("refunds", REFUNDS), Document("retention", RETENTION)]
    chunks = [c for d in docs for c in _doc_chunks(d, _sentences(d.text))]
    r = LateDenseRetriever(chunks, docs, embedder)
    assert r.flags == []
    hits = r.search(["How many days do Gold members have to get a refund?",
                     "How long are customer records kept?"], k=3)
    assert hits[0][0].chunk.doc_id == "refunds" and "14 days" in hits[0][0].chunk.text
    assert hits[1][0].chunk.doc_id == "retention"
    filtered = r.search(["refund"], k=5, where={"doc_id": "retention"})[0]
    assert filtered and {h.chunk.doc_id for h in filtered} == {"retention"}
    with pytest.warns(LateChunkingWarning, match="prefix"):
        r2 = LateDenseRetriever([c.with_prefix("[Policy]") for c in chunks], docs, embedder)
    assert r2.flags == [f"late:prefix_ignored:{len(chunks)}"]


def test_late_vectors_are_cached_in_checksummed_npz(embedder, tmp_path, monkeypatch):
    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path))
    doc = Document("d", " ".join([REFUNDS, RETENTION]))
    chunks = _doc_chunks(doc, _sentences(doc.text))
    first = LateEmbedder(embedder).embed([doc], chunks)
    again = LateEmbedder(embedder)
    monkeypatch.setattr(again, "forward", lambda *a: pytest.fail("the model was called"))
    np.testing.assert_array_equal(again.embed([doc], chunks[::-1]), first[::-1])
    assert again.stats["cache_hits"] == len(chunks)
    assert list(tmp_path.rglob("*.npz")) and not list(tmp_path.rglob("*.pkl"))
    other = LateEmbedder(embedder, window=16, overlap=4)  # other settings: another key
    with pytest.warns(LateChunkingWarning):
        other.embed([doc], chunks)
    assert other.stats["cache_hits"] == 0 and other.stats["windows"] > 1
    cached = LateEmbedder(embedder, window=16, overlap=4)
    with pytest.warns(LateChunkingWarning):
        cached.embed([doc], chunks)
    assert cached.stats["cache_hits"] == len(chunks) and cached.stats["windows"] == 0
    assert cached.flags == other.flags == ["late:windowed_docs:1"]  # same rows, cached or not


def test_a_window_over_the_model_limit_is_an_error(embedder):
    with pytest.raises(ValueError, match="limit"):
        LateEmbedder(embedder, window=10_000, cache=False).embed_document("a b c", [(0, 5)])


def test_every_chunk_pools_head_and_tail_with_specials_every(embedder):
    """``specials="every"``: each chunk's mean takes in the head ([CLS], and the prompt when
    the model pools it) and the tail ([SEP]), as its own ordinary embedding would, besides its
    own contextual tokens; one chunk in one window is still its ordinary embedding."""
    import torch

    text = " ".join([REFUNDS, RETENTION] * 3)
    spans = _sentences(text)
    tok = embedder.tokenizer(text, return_offsets_mapping=True, return_tensors="pt")
    offsets = tok.pop("offset_mapping")[0]
    with torch.inference_mode():
        states = embedder.model[0].auto_model(**tok).last_hidden_state[0]
    n = len(states)
    every = LateEmbedder(embedder, specials="every", cache=False)
    ref = []
    for s, e in spans:
        rows = [0] + [t for t in range(1, n - 1) if s <= offsets[t, 0] < e] + [n - 1]
        v = states[rows].mean(0).numpy()
        ref.append(v / np.linalg.norm(v))
    np.testing.assert_allclose(every.embed_document(text, spans), np.stack(ref), atol=1e-5)
    one = every.embed_document(text, [(0, len(text))])
    assert float(one[0] @ embedder.encode([text])[0]) > 0.99999
    with pytest.raises(ValueError, match="specials must be"):
        LateEmbedder(embedder, specials="some")


@pytest.mark.skipif(not get_settings().gemma_dir,
                    reason="set RAGKIT_GEMMA_DIR to an assembled EmbeddingGemma folder")
def test_embeddinggemma_prompt_and_dense_layers():
    from ragkit.embed import Embedder

    emb = Embedder(str(get_settings().gemma_dir), cache=False, show_progress=False)
    late = LateEmbedder(emb, cache=False)
    text = " ".join([REFUNDS, RETENTION] * 3)
    assert late.tokenize(text).head[1:]  # the document prompt is in the head, not the text
    assert float(late.embed_document(text, [(0, len(text))])[0] @ emb.encode([text])[0]) > 0.999
    vecs = late.embed_document(text, _sentences(text))
    q = emb.encode(["How many days do Gold members have to get a refund?"], "query")[0]
    assert "14 days" in text[slice(*_sentences(text)[int(np.argmax(vecs @ q))])]


def test_a_second_chunking_of_the_same_documents_reuses_the_forward_passes(embedder):
    """Windows depend on the document only, so another chunker's late vectors take the same
    window batches from the in-process memo: no new forward pass, bit-identical vectors."""
    from ragkit.embed import late as late_module

    doc = Document("d", _words(700))
    by_chars = _doc_chunks(doc, [(s, min(s + 90, len(doc.text)))
                                 for s in range(0, len(doc.text), 90)])
    by_sentence = _doc_chunks(doc, _sentences(doc.text))
    late_module.STATES.clear()
    memo = LateEmbedder(embedder, window=64, overlap=16, cache=False)
    calls = []
    forward = memo.forward
    memo.forward = lambda batch: calls.append(len(batch)) or forward(batch)
    with pytest.warns(LateChunkingWarning):
        memo.embed([doc], by_chars)
    n = len(calls)
    assert n > 0 and memo.stats["windows"] > 1
    with pytest.warns(LateChunkingWarning):
        reused = memo.embed([doc], by_sentence)
    assert len(calls) == n  # every batch came from the memo
    late_module.STATES.clear()
    with pytest.warns(LateChunkingWarning):
        fresh = LateEmbedder(embedder, window=64, overlap=16, cache=False).embed([doc],
                                                                              by_sentence)
    np.testing.assert_array_equal(reused, fresh)
    late_module.STATES.clear()


def test_late_quality_table_reads_the_saved_paired_rows_and_their_verdicts():
    """notebook 05 shows `ragkit bench late-quality`'s saved rows: one row per encoder,
    metric, window and pooling, the verdict from each interval, and sentences whose counts of
    beats / loses / no measurable difference come from those verdicts."""
    import pandas as pd

    from ragkit.experiments import late_quality_sentences, late_quality_table

    def row(embedder, window, specials, value, low, high, metric="diff_ndcg@10"):
        return {"notebook": "bench_late_quality", "experiment": "late_quality_paired",
                "embedder": embedder, "metric": metric, "value": value,
                "params": {"window": window, "specials": specials, "subset": "all",
                           "ci95": [str(low), str(high)], "wins": 1, "losses": 2, "ties": 3}}

    rows = pd.DataFrame([
        row("gemma", None, "edges", -0.04, -0.07, -0.006),
        row("gemma", 128, "every", 0.034, 0.007, 0.063),
        row("gemma", 512, "every", 0.008, -0.02, 0.04),
        row("minilm", None, "edges", 0.016, -0.006, 0.039),
        {**row("minilm", None, "edges", 0.5, 0.4, 0.6), "experiment": "late_quality"},
    ])
    table = late_quality_table(rows)
    assert len(table) == 4
    assert dict(zip(zip(table.embedder, table.window.astype(str)), table.verdict)) == {
        ("gemma", "limit"): "loses", ("gemma", "128"): "beats",
        ("gemma", "512"): "no measurable difference",
        ("minilm", "limit"): "no measurable difference"}
    gemma, minilm = late_quality_sentences(table)
    assert "beats naive in 1, loses in 1, no measurable difference in 1" in gemma
    assert "beats naive in 0, loses in 0, no measurable difference in 1" in minilm
    assert late_quality_table(pd.DataFrame()).empty



def test_late_quality_losses_say_where_late_chunking_loses_and_what_the_settings_show():
    """A loss is stated with its setting, its naive and late means and interval; beside it,
    the same pooling at every window (smallest first) and whether the difference falls as the
    window grows, and the other pooling at the same window. The bench's ``pass@k`` column
    is shown under the glossary's name, pass@k."""
    import pandas as pd

    from ragkit.experiments import late_quality_losses, late_quality_means, late_quality_table

    def paired(window, specials, value, low, high):
        return {"notebook": "bench_late_quality", "experiment": "late_quality_paired",
                "embedder": "gemma", "metric": "diff_pass@k", "value": value,
                "params": {"window": window, "specials": specials, "subset": "all",
                           "ci95": [str(low), str(high)], "wins": 1, "losses": 2, "ties": 3}}

    def mean(mode, window, specials, value):
        return {"notebook": "bench_late_quality", "experiment": "late_quality",
                "embedder": "gemma", "metric": "pass@k", "value": value,
                "params": {"mode": mode, "window": window, "specials": specials}}

    rows = pd.DataFrame([
        paired(None, "edges", -0.055, -0.096, -0.016), paired(512, "edges", -0.02, -0.05, 0.01),
        paired(128, "edges", 0.009, -0.02, 0.04), paired(None, "every", -0.031, -0.076, 0.013),
        mean("naive", None, None, 0.855), mean("late", None, "edges", 0.80)])
    table = late_quality_table(rows)
    assert set(table.metric) == {"pass@k"}
    means = late_quality_means(rows)
    assert means.set_index("mode").loc["naive"].isna()[["window", "pooling"]].all()
    (line,) = late_quality_losses(table, means)
    assert line.startswith("gemma, pass@k (all questions): late chunking loses at window limit "
                           "with edges pooling, 80.0% late against 85.5% naive "
                           "(-5.5 points [-9.6, -1.6]).")
    assert "late − naive is +0.9 at 128, -2.0 at 512, -5.5 at limit" in line
    # a pattern over three windows, never a measured effect of the window
    assert "over these 3 windows it falls as the window grows, but 1 of the 3 intervals " \
        "excludes 0" in line and "not a measured effect" in line
    assert "the larger the loss" not in line
    assert ("with every pooling at window limit it is -3.1 points [-7.6, +1.3] (no measurable "
            "difference), a smaller loss.") in line
    no_loss = late_quality_table(rows.iloc[2:3])
    assert late_quality_losses(no_loss, means) == []

def test_late_quality_comparison_builds_a_decision_from_one_saved_setting():
    """A saved setting becomes the paired comparison a closing's Decision needs: late and naive
    means, the difference and interval as saved, n the questions counted; a loss there makes
    the decision 'do not use'; a setting the rows lack gives None."""
    import pandas as pd

    from ragkit.experiments.late import (late_quality_comparison, late_quality_means,
                                         late_quality_table)
    from ragkit.report.decisions import Decision

    rows = pd.DataFrame([
        {"notebook": "bench_late_quality", "experiment": "late_quality_paired",
         "embedder": "gemma", "metric": "diff_pass@k", "value": -0.055,
         "params": {"window": None, "specials": "edges", "subset": "all",
                    "ci95": ["-0.096", "-0.016"], "wins": 13, "losses": 27, "ties": 193}},
        {"notebook": "bench_late_quality", "experiment": "late_quality", "embedder": "gemma",
         "metric": "pass@k", "value": 0.855, "params": {"mode": "naive"}},
        {"notebook": "bench_late_quality", "experiment": "late_quality", "embedder": "gemma",
         "metric": "pass@k", "value": 0.80,
         "params": {"mode": "late", "window": None, "specials": "edges"}}])
    table, means = late_quality_table(rows), late_quality_means(rows)
    c = late_quality_comparison(table, means, "gemma", "pass@k")
    assert (c.mean_a, c.mean_b, c.diff, c.low, c.high) == (0.80, 0.855, -0.055, -0.096, -0.016)
    assert (c.wins, c.losses, c.ties, c.n) == (13, 27, 193, 233)
    assert Decision("late", "naive", "pass@k", {"course": c}).call == "do not use"
    assert late_quality_comparison(table, means, "gemma", "pass@k", pooling="every") is None


def test_windows_that_recur_across_window_settings_are_encoded_once(embedder):
    """A sweep over overlaps shares windows (the first window of every document, and every
    document that fits in one): the memo keeps windows, not batches, so each recurring window
    runs through the encoder once, and the vectors are the bits a fresh run gives."""
    from ragkit.embed import late as late_module

    long_doc, short_doc = Document("long", _words(700)), Document("short", _words(40))
    chunks = [*_doc_chunks(long_doc, _sentences(long_doc.text)),
              *_doc_chunks(short_doc, _sentences(short_doc.text))]
    late_module.STATES.clear()
    seen: list[list[int]] = []

    def counting(late):
        forward = late.forward
        late.forward = lambda batch: seen.extend(map(tuple, batch)) or forward(batch)
        return late

    with pytest.warns(LateChunkingWarning):
        counting(LateEmbedder(embedder, window=64, overlap=16, cache=False)).embed(
            [long_doc, short_doc], chunks)
        first = len(seen)
        swept = counting(LateEmbedder(embedder, window=64, overlap=8, cache=False))
        vecs = swept.embed([long_doc, short_doc], chunks)
    assert len(seen) == len(set(seen))  # no window went through the encoder twice
    assert swept.stats["windows"] > len(seen) - first  # some of the second run's were reused
    late_module.STATES.clear()
    with pytest.warns(LateChunkingWarning):
        fresh = LateEmbedder(embedder, window=64, overlap=8, cache=False).embed(
            [long_doc, short_doc], chunks)
    np.testing.assert_array_equal(vecs, fresh)
    late_module.STATES.clear()
