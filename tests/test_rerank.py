"""The rerank stage (`ragkit.retrieve.rerank`): a reranker wraps a first-stage retriever."""

import numpy as np

from conftest import needs_benchmarks
from conftest import refund_chunks as _chunks
from conftest import refund_doc as _doc


def test_reranker_wraps_a_retriever(embedder):
    from ragkit.retrieve import BM25Retriever, detect_kind
    from ragkit.retrieve.rerank import BiEncoderScorer, Reranker

    doc = _doc()
    chunks = _chunks(doc)
    rr = Reranker(BM25Retriever(chunks), BiEncoderScorer(embedder=embedder), candidates=3)
    hits = rr.search(["how long does billing take to answer a refund request?"], k=2)
    assert len(hits[0]) == 2 and hits[0][0].chunk.start == chunks[1].start
    assert rr.params() == {"first_stage": "bm25", "reranker": "bi-encoder",
                             "reranker_model": "all-MiniLM-L6-v2", "candidates": 3}
    assert detect_kind("cross-encoder/ms-marco-MiniLM-L6-v2") == "cross-encoder"


class _ByLength:
    """A fake scorer: longer chunks score higher; records what it was asked to score."""

    kind, name = "fake", "by-length"

    def __init__(self):
        self.asked: list[int] = []

    def score(self, queries, candidates):
        self.asked.append(sum(len(cs) for cs in candidates))
        return [[float(c.end - c.start) for c in cs] for cs in candidates]


def test_only_the_first_candidates_are_rescored_the_rest_keep_their_order():
    from ragkit.retrieve import BM25Retriever
    from ragkit.retrieve.rerank import Reranker

    chunks = _chunks(_doc())
    first = BM25Retriever(chunks)
    query = ["how long does billing take to answer a refund request?"]
    base = first.search(query, 3)[0]
    scorer = _ByLength()
    hits = Reranker(first, scorer, candidates=2).search(query, k=3)[0]
    head = sorted(base[:2], key=lambda h: -(h.chunk.end - h.chunk.start))
    assert [h.chunk.id for h in hits] == [h.chunk.id for h in head] + [base[2].chunk.id]
    assert scorer.asked == [2]  # the third hit was not rescored ...
    assert hits[2].score < min(h.score for h in hits[:2])  # ... and ranks below the rescored


def packaged_or_skip():
    import pytest

    from ragkit.models import packaged_cross_encoder

    try:
        return packaged_cross_encoder()
    except (ImportError, FileNotFoundError) as e:  # make setup installs it
        pytest.skip(f"packaged cross-encoder not installed: {e}")


def test_packaged_cross_encoder_reads_query_and_chunk_together(tmp_path, monkeypatch):
    from ragkit.retrieve import BM25Retriever, OnnxCrossEncoderScorer, detect_kind, make_reranker

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = packaged_or_skip()
    assert detect_kind(folder) == "onnx-cross-encoder"
    chunks = _chunks(_doc())
    scorer = OnnxCrossEncoderScorer(folder)
    question = "Can I get my money back on a monthly plan?"
    (scores,) = scorer.score([question], [chunks])
    assert int(np.argmax(scores)) == 1  # "Monthly plans are never refunded ..."
    assert scorer.flags == []  # three short pairs: nothing cut
    rr = make_reranker(BM25Retriever(chunks), "packaged", candidates=3)
    assert rr.params()["reranker"] == "cross-encoder"
    assert rr.params()["reranker_model"] == "ms-marco-MiniLM-L-12-v2-int8"
    assert rr.search([question], k=1)[0][0].chunk.id == chunks[1].id


def test_cross_encoder_cuts_only_the_chunk_says_so_and_caches(tmp_path, monkeypatch):
    from ragkit.retrieve import OnnxCrossEncoderScorer

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = packaged_or_skip()
    chunks = _chunks(_doc())
    question = "How long after purchase can an annual plan be cancelled for a full refund?"
    scorer = OnnxCrossEncoderScorer(folder, max_length=24)
    (cut,) = scorer.score([question], [chunks[:1]])
    assert scorer.flags == ["truncated:1/1"]  # the pair did not fit in 24 tokens
    (full,) = OnnxCrossEncoderScorer(folder, max_length=256).score([question], [chunks[:1]])
    assert cut[0] != full[0]

    again = OnnxCrossEncoderScorer(folder, max_length=24)
    again._run = None  # a cached pair is never run through the model again
    assert again.score([question], [chunks[:1]])[0][0] == cut[0]
    assert again.flags == ["truncated:1/1"]  # the cut is remembered with the score


def test_kept_candidates_hold_their_places_and_are_never_scored():
    """`keep`: candidates the scorer is not trusted with (code, for a cross-encoder trained on
    web passages) stay where the first stage put them; the rest are reordered around them."""
    from ragkit.retrieve import BM25Retriever, is_code
    from ragkit.retrieve.rerank import Reranker

    chunks = _chunks(_doc())
    first = BM25Retriever(chunks)
    query = ["how long does billing take to answer a refund request?"]
    base = first.search(query, 3)[0]
    assert len(base) == 3
    kept_id = base[1].chunk.id
    scorer = _ByLength()
    r = Reranker(first, scorer, candidates=3, keep=lambda c: c.id == kept_id)
    hits = r.search(query, k=3)[0]
    assert hits[1].chunk.id == kept_id  # its place
    free = sorted([base[0], base[2]], key=lambda h: -(h.chunk.end - h.chunk.start))
    assert free[0].chunk.id == base[2].chunk.id  # the scorer does reorder the others
    assert [hits[0].chunk.id, hits[2].chunk.id] == [h.chunk.id for h in free]
    assert scorer.asked == [2]  # the kept candidate was not scored
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))
    everything = Reranker(first, _ByLength(), candidates=3, keep=lambda c: True)
    assert [h.chunk.id for h in everything.search(query, k=3)[0]] == [h.chunk.id for h in base]
    assert r.params()["not_rescored"] == "<lambda>"
    code = chunks[0].__class__(doc_id="x", start=0, end=1, text="x", strategy="code",
                               metadata={"doc_class": "code"})
    assert is_code(code) and not is_code(chunks[0])


def test_a_cross_encoder_score_depends_on_its_pair_alone(tmp_path, monkeypatch):
    """Pairs of very different lengths scored in one call get the scores each gets alone, in
    the order asked (the int8 model's dynamic scales would otherwise mix a batch's pairs)."""
    from ragkit.retrieve import OnnxCrossEncoderScorer

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = packaged_or_skip()
    chunks = _chunks(_doc())
    question = "Can I get my money back on a monthly plan?"
    pairs = [(question, c.text * reps) for reps in (6, 1, 3) for c in chunks]
    scorer = OnnxCrossEncoderScorer(folder, cache=False)
    together = scorer._run(pairs)
    alone = np.concatenate([scorer._run([p]) for p in pairs])
    np.testing.assert_allclose(together, alone, atol=1e-6)
    assert len(set(np.round(together[:, 0], 3))) > len(chunks)  # not one score for all
    sorted_batches = OnnxCrossEncoderScorer(folder, cache=False, batch_size=4)._run(pairs)
    assert sorted_batches.shape == together.shape  # batches too return pairs in order asked
    assert np.corrcoef(sorted_batches[:, 0], together[:, 0])[0, 1] > 0.9


def test_a_stopped_cross_encoder_run_keeps_the_blocks_it_finished(tmp_path, monkeypatch):
    from ragkit.retrieve import OnnxCrossEncoderScorer

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = packaged_or_skip()
    chunks = _chunks(_doc())
    questions = ["Can I get my money back on a monthly plan?", "How do I cancel?"]
    scorer = OnnxCrossEncoderScorer(folder, save_every=len(chunks))
    run, calls = scorer._run, []

    def stops_on_the_second_block(pairs):
        calls.append(len(pairs))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return run(pairs)

    scorer._run = stops_on_the_second_block
    try:
        scorer.score(questions, [chunks, chunks])
    except KeyboardInterrupt:
        pass
    assert calls == [len(chunks), len(chunks)]
    again = OnnxCrossEncoderScorer(folder, save_every=len(chunks))
    again_calls = []
    again_run = again._run
    again._run = lambda pairs: again_calls.append(len(pairs)) or again_run(pairs)
    first, second = again.score(questions, [chunks, chunks])
    assert again_calls == [len(chunks)]  # only the second question's pairs are scored again
    (alone,) = OnnxCrossEncoderScorer(folder, cache=False).score(questions[:1], [chunks])
    np.testing.assert_allclose(first, alone, atol=2e-3)


@needs_benchmarks()
def test_rerank_speed_bench_records_both_batchings_and_how_far_scores_move(tmp_path,
                                                                           monkeypatch):
    from ragkit.experiments import rerank_speed
    from ragkit.report import read_rows

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    packaged_or_skip()
    rows = rerank_speed(smoke=True)
    assert [r[0] for r in rows] == [1, 16] and all(r[1] == 16 for r in rows)
    recorded = {(r["strategy"], r["metric"]): r["value"] for r in read_rows(
        tmp_path / "results" / "bench_rerank_speed.jsonl")}
    assert recorded[("batch 1", "pairs_per_s")] > 0 and recorded[("batch 16", "pairs_per_s")] > 0
    # int8 dynamic quantization: batching moves scores, which is why one pair at a time
    assert recorded[("batch 16 vs batch 1", "max_abs_score_difference")] > 0.01


class _Fixed:
    """A fake first stage: the same chunks, in the order given, for every query."""

    kind = "fixed"
    flags: list[str] = []

    def __init__(self, chunks):
        self.chunks = list(chunks)

    def search(self, queries, k, where=None):
        from ragkit.retrieve import Hit

        return [[Hit(c, 1.0 / (r + 1)) for r, c in enumerate(self.chunks[:k])] for _ in queries]


class _Reversed:
    """A fake scorer that prefers the first stage's last candidate: it scores by position."""

    kind, name = "fake", "reversed"

    def __init__(self, order):
        self.rank = {c.id: r for r, c in enumerate(order)}

    def score(self, queries, candidates):
        return [np.asarray([float(self.rank[c.id]) for c in cs]) for cs in candidates]


def _four():
    from ragkit.types import Chunk, Document

    doc = Document("d", "alpha beta gamma delta")
    return [Chunk.make(doc, s, e, "t") for s, e in ((0, 5), (6, 10), (11, 16), (17, 22))]


def test_fusing_the_scorer_with_the_first_stage_orders_by_weighted_reciprocal_rank():
    """First stage A, B, C, D; the scorer D, C, B, A. With the scorer's weight 0.6 (constant
    0): A 0.4/1 + 0.6/4 = 0.55, B 0.4/2 + 0.6/3 = 0.40, C 0.4/3 + 0.6/2 = 0.43, D 0.4/4 + 0.6/1
    = 0.70, so D, A, C, B; replacing (the default) gives D, C, B, A."""
    import pytest

    from ragkit.retrieve.rerank import Reranker

    a, b, c, d = chunks = _four()
    first, scorer = _Fixed(chunks), _Reversed(chunks)

    def order(**kw):
        hits = Reranker(first, scorer, candidates=4, **kw).search(["q"], k=4)[0]
        return [h.chunk.id for h in hits], [h.score for h in hits]

    ids, scores = order(fuse=0.6)
    assert ids == [d.id, a.id, c.id, b.id]
    np.testing.assert_allclose(scores, [0.7, 0.55, 0.4 / 3 + 0.3, 0.4])
    assert order()[0] == [d.id, c.id, b.id, a.id]  # default: the scorer's order
    assert order(fuse=1.0)[0] == [d.id, c.id, b.id, a.id]
    assert order(fuse=0.0)[0] == [a.id, b.id, c.id, d.id]
    # a large constant flattens the ranks: 0.6 of the scorer wins every swap
    assert order(fuse=0.6, fuse_constant=60)[0] == [d.id, c.id, b.id, a.id]
    with pytest.raises(ValueError):
        Reranker(first, scorer, fuse=1.5)
    described = Reranker(first, scorer, candidates=4, fuse=0.6).params()
    assert described["rerank_fusion_weight"] == 0.6
    assert described["rerank_fusion_constant"] == 0.0


def test_the_default_reranker_is_unchanged_by_the_fusion_option():
    """No `fuse`: hits carry the scorer's own scores in the scorer's order, kept candidates
    hold their places, deeper hits follow below, and params() names no fusion."""
    from ragkit.retrieve.rerank import Reranker

    a, b, c, d = chunks = _four()
    scorer = _Reversed(chunks)
    r = Reranker(_Fixed(chunks), scorer, candidates=3, keep=lambda ch: ch.id == b.id)
    hits = r.search(["q"], k=4)[0]
    assert [h.chunk.id for h in hits] == [c.id, b.id, a.id, d.id]
    assert [h.score for h in hits] == [2.0, 2.0, 0.0, -1.0]
    assert set(r.params()) == {"first_stage", "reranker", "reranker_model", "candidates",
                                 "not_rescored"}
    fused = Reranker(_Fixed(chunks), scorer, candidates=3, keep=lambda ch: ch.id == b.id,
                     fuse=0.6).search(["q"], k=4)[0]
    # among A and C: A 0.4/1 + 0.6/2 = 0.70, C 0.4/2 + 0.6/1 = 0.80; B keeps its place
    assert [h.chunk.id for h in fused] == [c.id, b.id, a.id, d.id]
    np.testing.assert_allclose([h.score for h in fused], [0.8, 0.8, 0.7, -0.3])


def test_the_packaged_cross_encoder_reads_512_tokens(tmp_path, monkeypatch):
    """The model's position table has 512 rows: at max_length 512 a pair of ~400 tokens is
    scored whole, and its score differs from the one cut at 256."""
    from ragkit.retrieve.rerank import OnnxCrossEncoderScorer

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = packaged_or_skip()
    chunks = _chunks(_doc())
    text = " ".join(c.text for c in chunks) * 4
    long = chunks[0].__class__(doc_id="x", start=0, end=len(text), text=text, strategy="t")
    question = "Can I get my money back on a monthly plan?"
    wide = OnnxCrossEncoderScorer(folder, max_length=512, cache=False)
    n = len(wide.tokenizer.encode(question, long.text).ids)
    assert 256 < n <= 512
    (full,) = wide.score([question], [[long]])
    assert wide.flags == []
    narrow = OnnxCrossEncoderScorer(folder, max_length=256, cache=False)
    (cut,) = narrow.score([question], [[long]])
    assert narrow.flags == ["truncated:1/1"] and full[0] != cut[0]


def test_a_frozen_first_stage_gives_the_live_stack_ranking_at_every_depth(embedder):
    """`ragkit bench rerank-why` searches the stack once, deep, and cuts: the same hits as a
    search at k (each side of the fusion takes its own fixed number of candidates)."""
    from ragkit.retrieve import BM25Retriever, DenseRetriever, HybridRetriever
    from ragkit.tools.bench_rerank import FrozenFirstStage

    chunks = _chunks(_doc())
    live = HybridRetriever(DenseRetriever(chunks, embedder), BM25Retriever(chunks),
                           weights=(0.5, 0.5))
    queries = ["how long does billing take to answer a refund request?",
               "Can I get my money back on a monthly plan?"]
    frozen = FrozenFirstStage(live, queries)
    for k in (1, 2, 3, 10):
        got = frozen.search(queries, k)
        want = live.search(queries, k)
        assert [[(h.chunk.id, h.score) for h in hs] for hs in got] == \
            [[(h.chunk.id, h.score) for h in hs] for hs in want]


def test_a_widened_cross_encoder_reuses_only_the_scores_of_pairs_that_fit(tmp_path,
                                                                           monkeypatch):
    """At 512 tokens, a pair that fit in 256 is the same input: its cached 256 score is
    reused; a pair 256 cut is run again, and every score equals a plain 512 scorer's."""
    from ragkit.retrieve.rerank import OnnxCrossEncoderScorer
    from ragkit.tools.bench_rerank import widened_scorer

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = packaged_or_skip()
    chunks = _chunks(_doc())
    text = " ".join(c.text for c in chunks) * 4
    long = chunks[0].__class__(doc_id="x", start=0, end=len(text), text=text, strategy="t")
    question = "Can I get my money back on a monthly plan?"
    narrow = OnnxCrossEncoderScorer(folder, max_length=256)
    (at256,) = narrow.score([question], [[*chunks, long]])
    wide = widened_scorer(folder, narrow, 512)
    (got,) = wide.score([question], [[*chunks, long]])
    assert wide.reused == len(chunks)  # the long pair was run again ...
    (plain,) = OnnxCrossEncoderScorer(folder, max_length=512, cache=False).score(
        [question], [[*chunks, long]])
    np.testing.assert_allclose(got, plain, atol=1e-6)  # ... and every score is a 512 score
    assert got[-1] != at256[-1] and wide.flags == []


def test_chunk_kinds_for_the_diagnosis():
    from ragkit.tools.bench_rerank import chunk_kind, variant_label
    from ragkit.types import Chunk, Document

    d = Document("d", "# Refunds\n\n- one item here\n- another item\n\nSome prose that is long "
                      "enough to count as a body of text.")
    whole = Chunk.make(d, 0, len(d.text), "t")
    assert chunk_kind(whole) == "list"
    assert chunk_kind(Chunk.make(d, 0, 9, "t")) == "heading-only"
    assert chunk_kind(Chunk.make(d, 45, len(d.text), "t")) == "prose"
    assert variant_label(512, 5, (0.5, 0)) == "ce512@5 fuse 0.5/rrf 0"


def test_masking_the_padding_is_the_default_and_changes_the_scores_and_the_cache_key(
        tmp_path, monkeypatch):
    """The packaged tokenizer pads every pair to 512 tokens; the default scorer masks that
    padding, as the model was trained, while `mask_padding=False` (the scores results were
    measured with before the fix) feeds an attention mask over all 512: with the mask, an
    off-topic question scores far below an on-topic one (MS MARCO logits); one pair at a time
    a score depends on its pair alone; and the two kinds of score are cached apart."""
    from ragkit.retrieve.rerank import OnnxCrossEncoderScorer

    monkeypatch.setenv("RAGKIT_CACHE_DIR", str(tmp_path / "cache"))
    folder = packaged_or_skip()
    chunks = _chunks(_doc())
    default = OnnxCrossEncoderScorer(folder, mask_padding=False)  # before the fix
    assert len(default.tokenizer.encode("q", chunks[0].text).ids) == 512  # padded to 512
    masked = OnnxCrossEncoderScorer(folder)
    assert masked.mask_padding
    assert len(masked.tokenizer.encode("q", chunks[0].text).ids) < 100
    assert default.identity != masked.identity
    on, off = "Can I get my money back on a monthly plan?", "What is the capital of France?"
    (d_on,), (d_off,) = default.score([on], [chunks[1:2]]), default.score([off], [chunks[1:2]])
    (m_on,), (m_off,) = masked.score([on], [chunks[1:2]]), masked.score([off], [chunks[1:2]])
    assert m_on[0] - m_off[0] > 5 > d_on[0] - d_off[0]  # attended padding compresses scores
    # the old scores are reproducible: the whole 512-token input attended
    enc = default.tokenizer.encode(on, chunks[1].embedding_text())
    feed = {"input_ids": np.asarray([enc.ids]), "attention_mask": np.ones((1, 512), np.int64),
            "token_type_ids": np.asarray([enc.type_ids])}
    raw = default.session.run(None, {k: v for k, v in feed.items() if k in default.inputs})[0]
    assert float(np.asarray(raw).reshape(-1)[0]) == float(np.float32(d_on[0]))
    # masked, one pair at a time (the default batch): no padding at all, so a score is its
    # pair's alone, whatever else is scored in the same call
    pairs = [(on, c.text) for c in chunks] + [(on, chunks[0].text * 3)]
    alone = np.concatenate([masked._run([pr]) for pr in pairs])
    np.testing.assert_array_equal(masked._run(pairs), alone)
