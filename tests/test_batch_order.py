"""Batches by tokens against batches by characters: the same vectors, less padding."""

import numpy as np

from ragkit.experiments.batch_order import batch_order, char_batches, padding_share


def test_token_batches_pad_less_than_character_batches_and_give_the_same_vectors():
    # equal characters, unequal tokens: digits split into many tokens, words into few
    words = [f"alpha beta gamma delta epsilon {i} " * 5 for i in range(8)]
    digits = [("7 3 9 1 4 8 2 6 0 5 " * 20)[:len(w)] for w in words]
    assert [len(w) for w in words] == [len(d) for d in digits]
    texts = [t for pair in zip(words, digits) for t in pair]
    got = batch_order(texts, best_of=1, batch_size=4)
    assert got["texts"] == 16 and got["max_abs_difference"] < 1e-6
    assert got["tokens"]["padding"] < got["characters"]["padding"]
    assert got["tokens"]["seconds"] > 0 and got["characters"]["seconds"] > 0


def test_char_batches_and_padding():
    batches = char_batches(["aa", "a", "aaaa", "aaa"], 2)
    assert [b.tolist() for b in batches] == [[2, 3], [0, 1]]
    assert padding_share(batches, [5, 1, 2, 2], 512) == (2 * 2 + 5 * 2) / 10 - 1
    assert padding_share([np.array([0, 1])], [600, 10], 512) == (512 * 2) / 522 - 1
