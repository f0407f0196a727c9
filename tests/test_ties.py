"""Tied scores come back in corpus order, whatever order faiss gives them: a ranking that
depended on the CPU's rounding or on faiss's heap would change a benchmark's numbers from one
machine to the next (Chroma's finance corpus holds passages word for word at two offsets)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ragkit.retrieve import VectorIndex
from ragkit.retrieve.index import settle_ties


def test_a_passage_held_twice_ranks_its_earlier_copy_first():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(20, 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    v[[3, 10, 17]] = v[10]  # one passage at three offsets
    index = VectorIndex(v)
    assert index.search(v[10], k=2)[1].tolist() == [[3, 10]]
    allowed = [{"keep": i != 3} for i in range(20)]
    assert VectorIndex(v, allowed).search(v[10], 2, where={"keep": True})[1].tolist() == [[10, 17]]


def test_a_tie_at_the_cut_keeps_the_earliest_positions_even_past_the_first_depth():
    # 30 hits tie for second place: the first search (k + 8 deep) holds only some of them
    scores = np.array([[0.9] + [0.5] * 30], np.float32)
    ids = np.array([[5] + list(range(100, 70, -1))])
    depths = []

    def search(depth):
        depths.append(depth)
        return scores[:, :depth], ids[:, :depth]

    got = settle_ties(search, 3, 31)
    assert got[1].tolist() == [[5, 71, 72]]
    assert depths == [11, 22, 31]


def test_scores_a_rounding_apart_are_a_tie_and_real_gaps_are_kept():
    scores = np.array([[0.8, 0.8 - 4e-7, 0.7, 0.7 - 2e-7]], np.float32)
    ids = np.array([[9, 2, 8, 1]])
    s, i = settle_ties(lambda d: (scores[:, :d], ids[:, :d]), 4, 4)
    assert i.tolist() == [[2, 9, 1, 8]]


@given(st.lists(st.lists(st.integers(-2, 2), min_size=3, max_size=3), min_size=1, max_size=40),
       st.lists(st.integers(-2, 2), min_size=3, max_size=3), st.integers(1, 12))
def test_the_ranking_is_the_exact_scores_with_ties_in_corpus_order(rows, query, k):
    # small whole numbers: every dot product is exact in float32, and ties are common
    v, q = np.array(rows, np.float32), np.array(query, np.float32)
    scores, ids = VectorIndex(v).search(q, k)
    exact = v.astype(np.float64) @ q.astype(np.float64)
    want = np.lexsort((np.arange(len(v)), -exact))[:k]
    assert ids[0, :len(want)].tolist() == want.tolist()
    assert np.allclose(scores[0, :len(want)], exact[want])
    assert (ids[0, len(want):] == -1).all()
