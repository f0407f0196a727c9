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


def test_the_speed_page_reads_the_batch_order_rows(tmp_path, monkeypatch):
    from ragkit.experiments.batch_order import readme_lines
    from ragkit.report import Recorder

    assert readme_lines(tmp_path) == []
    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    rec = Recorder("bench_batch_order")
    common = dict(experiment="batch_order", benchmark="mixed", embedder="all-MiniLM-L6-v2",
                  params={"texts": 600, "batch_size": 32, "best_of": 3})
    for name, secs, pad in (("by characters", 27.8, 0.308), ("by tokens", 21.8, 0.034)):
        rec.add(**common, strategy=name, metric="seconds", value=secs)
        rec.add(**common, strategy=name, metric="padding_share", value=pad)
    rec.add(**common, strategy="by tokens", metric="max_abs_difference_vs_characters", value=0.0)
    rec.save()
    text = readme_lines(tmp_path)[1]
    assert "by tokens 21.8 s with 3.4 % padding, by characters 27.8 s with 30.8 % (1.28x)" in text
    assert "600 chunks" in text and "0.0e+00" in text
