"""The static token-mean embedder of `ragkit bench ann`: deterministic, its cumulative-sum window
means equal a direct mean, the stride and the even take."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragkit.scale.static import (StaticEmbedder, Windows, stride_for, total_windows,
                                 window_means, window_starts)

TABLE = np.random.default_rng(7).normal(size=(50, 6)).astype(np.float32)


def direct(ids, table, start, width):
    return table[np.asarray(ids[start:start + width], np.int64)].astype(np.float64).mean(axis=0)


def unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.integers(0, len(TABLE) - 1), min_size=1, max_size=120),
       width=st.integers(1, 40), stride=st.integers(1, 15))
def test_window_means_equal_a_direct_mean(ids, width, stride):
    starts = window_starts(len(ids), width, stride)
    got = window_means(np.array(ids), TABLE, width, stride)
    assert len(got) == len(starts) >= 1
    assert starts[0] == 0 and np.all(np.diff(starts) == stride)
    if len(ids) > width:  # whole windows only, and no room for another
        assert starts[-1] + width <= len(ids) < starts[-1] + stride + width
    else:
        assert starts.tolist() == [0]
    for row, s in zip(got, starts):
        np.testing.assert_allclose(row, direct(ids, TABLE, s, width), rtol=1e-5, atol=1e-6)


@settings(max_examples=100, deadline=None)
@given(docs=st.lists(st.lists(st.integers(0, len(TABLE) - 1), min_size=0, max_size=60),
                     min_size=1, max_size=5),
       widths=st.lists(st.integers(1, 20), min_size=1, max_size=3, unique=True),
       stride=st.integers(1, 9))
def test_the_embedders_window_vectors_are_the_normalised_direct_means(docs, widths, stride):
    emb = StaticEmbedder.__new__(StaticEmbedder)  # the arithmetic, without the model's table
    emb.table, emb.dim = TABLE, TABLE.shape[1]
    tokens = [np.array(d, np.int64) for d in docs]
    parts = [(i, w, s) for i, t in enumerate(tokens) for w in widths
             for s in window_starts(len(t), w, stride)]
    arr = np.array(parts, np.int64).reshape(-1, 3)
    windows = Windows([f"d{i}" for i in range(len(docs))], tokens, arr[:, 0], arr[:, 1],
                      arr[:, 2], stride)
    assert len(windows) == total_windows([len(t) for t in tokens], widths, stride)
    got = emb.window_vectors(windows)
    assert got.dtype == np.float32 and got.shape == (len(parts), TABLE.shape[1])
    for row, (i, w, s) in zip(got, parts):
        np.testing.assert_allclose(row, unit(direct(docs[i], TABLE, s, w)), rtol=1e-5,
                                   atol=1e-6)


@settings(max_examples=200, deadline=None)
@given(lengths=st.lists(st.integers(0, 500), min_size=1, max_size=6),
       widths=st.lists(st.integers(1, 64), min_size=1, max_size=2, unique=True),
       n=st.integers(1, 3000))
def test_the_stride_is_the_largest_that_gives_n_windows(lengths, widths, n):
    stride = stride_for(lengths, widths, n)
    assert stride >= 1
    if total_windows(lengths, widths, 1) >= n:
        assert total_windows(lengths, widths, stride) >= n
        assert total_windows(lengths, widths, stride + 1) < n or stride >= max(lengths)
    else:
        assert stride == 1


def test_take_spreads_evenly_and_keeps_the_order():
    k = 1000
    w = Windows(["a"], [np.arange(5)], np.zeros(k, np.int64), np.ones(k, np.int64),
                np.arange(k, dtype=np.int64), 1)
    took = w.take(10)
    assert took.starts.tolist() == list(range(0, 1000, 100))
    assert w.take(5000) is w


@pytest.fixture(scope="module")
def static():
    return StaticEmbedder()


def test_the_static_embedder_is_minilms_table_and_deterministic(static):
    assert static.table.shape == (30522, 384) and static.dim == 384
    text = ["Annual plans can be cancelled within 30 days of purchase for a full refund. "
            "After 30 days the unused months are refunded pro rata, minus a fee."]
    a = static.windows(["refund"], text, (8, 4), 3)
    v1, v2 = static.window_vectors(a), StaticEmbedder().window_vectors(a)
    assert np.array_equal(v1, v2)
    np.testing.assert_allclose(np.linalg.norm(v1, axis=1), 1.0, rtol=1e-5)
    ids = a.tokens[0]
    for j in (0, 1, len(a) - 1):  # a few windows against a direct mean of the table rows
        s, w = int(a.starts[j]), int(a.widths[j])
        np.testing.assert_allclose(v1[j], unit(direct(ids, static.table, s, w)), rtol=1e-5,
                                   atol=1e-6)
    q = static.embed(text + ["refund"])
    np.testing.assert_allclose(q[0], unit(direct(ids, static.table, 0, len(ids))), rtol=1e-5,
                               atol=1e-6)
    assert np.array_equal(q, static.embed(text + ["refund"]))

