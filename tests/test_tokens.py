from ragkit.text import get_tokenizer
from ragkit.text.tokens import PIECE


def test_long_text_is_tokenised_in_pieces_without_changing_tokens():
    tok = get_tokenizer("cl100k_base")
    text = ("Refunds are available within 14 days of purchase.  This applies to unused "
            "services only.\n\n" * (3 * PIECE // 90))
    assert len(text) > 2 * PIECE
    whole = tok._enc.encode(text[: 900_000], disallowed_special=())  # under the 1M refusal
    assert tok.encode(text[: 900_000]) == whole
    spans = tok.spans(text)
    assert len(spans) == tok.count(text)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))  # contiguous, nothing lost


def test_hf_spans_are_character_offsets():
    tok = get_tokenizer("minilm")
    text = "Gold tier: 14 days."
    spans = tok.spans(text)
    assert [text[s:e] for s, e in spans][:3] == ["Gold", "tier", ":"]
    assert tok.count(text) == len(spans)


from hypothesis import given, settings, strategies as st  # noqa: E402

_TEXT = st.lists(st.sampled_from(list("ab é日本語🙂ب।\n\t.,-") + ["  ", "ing ", "the "]),
                 max_size=150).map("".join)


@settings(max_examples=60, deadline=None)
@given(_TEXT)
def test_first_chars_is_the_end_of_the_nth_token_span(text):
    """The budget packer's fast cut (decoded bytes of the first n tokens) lands exactly where
    the token offsets put the end of token n, multibyte characters split across tokens too."""
    tok = get_tokenizer("cl100k_base")
    spans = tok.spans(text)
    for n in range(len(spans) + 2):
        expected = 0 if n == 0 else (spans[n - 1][1] if n <= len(spans) else len(text))
        assert tok.first_chars(text, n) == expected


# ------------------------------------------------------------ issue 33: one count cache

def test_the_one_count_cache_counts_as_the_tokenizer_does():
    from ragkit.evaluate import count_tokens as budget_count
    from ragkit.text.tokens import _COUNTS, clear_counts, count_tokens, counter

    texts = ["Refunds are available within 14 days.", "", "  \n", "Größe_max = 3", "x" * 300]
    clear_counts()
    for name in ("cl100k_base", "minilm", "chars"):
        tok = get_tokenizer(name)
        want = [tok.count(t) for t in texts]
        assert [count_tokens(t, name) for t in texts] == want
        assert [count_tokens(t, tok) for t in texts] == want  # a tokenizer: keyed by its name
        assert list(map(counter(name), texts)) == want
    assert [budget_count(t) for t in texts] == [get_tokenizer("cl100k_base").count(t)
                                                for t in texts]
    assert ("minilm", texts[0]) in _COUNTS and ("cl100k_base", texts[0]) in _COUNTS
    assert not any(name == "chars" for name, _ in _COUNTS)  # characters need no cache
    clear_counts()
    assert not _COUNTS


def test_the_count_cache_empties_when_it_holds_too_much(monkeypatch):
    import ragkit.text.tokens as tokens

    tokens.clear_counts()
    monkeypatch.setattr(tokens, "COUNT_CACHE_CHARS", 25)
    assert tokens.count_tokens("one two three four", "minilm") == 4  # 18 characters
    assert tokens.count_tokens("five six seven", "minilm") == 3  # 18 + 14 > 25: emptied first
    assert list(tokens._COUNTS) == [("minilm", "five six seven")]
    tokens.clear_counts()


def test_first_chars_keeps_each_texts_token_ends_for_its_next_cuts():
    """The packer cuts the same bodies at many budgets: a text is tokenised once for all of
    its cuts, and the cuts are the ones a fresh tokenisation gives."""
    from ragkit.text.tokens import TiktokenTokenizer

    tok = TiktokenTokenizer("cl100k_base")
    calls = []
    real = tok.encode
    tok.encode = lambda text: calls.append(text) or real(text)
    text = "Größe: 14 days 🙂 for unused services only. " * 20
    fresh = TiktokenTokenizer("cl100k_base")
    spans = fresh.spans(text)
    for n in (1, 7, 50, len(spans) - 1, len(spans), len(spans) + 3):
        want = spans[n - 1][1] if n <= len(spans) else len(text)
        assert tok.first_chars(text, n) == want
    assert calls == [text]
