"""The one sentence splitter (ragkit.text.sentences): exact offsets in several scripts."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragkit.text import sentence_spans
from ragkit.text.sentences import sentence_cuts


def split(text):
    return [text[s:e] for s, e in sentence_spans(text)]


@pytest.mark.parametrize("text,expected", [
    ("Fees apply, e.g. late fees. Gold pays 2%. See Mr. Smith.",
     ["Fees apply, e.g. late fees.", "Gold pays 2%.", "See Mr. Smith."]),
    ("Dr. Jones met J. R. Smith at 5 p.m. yesterday. It rained.",
     ["Dr. Jones met J. R. Smith at 5 p.m. yesterday.", "It rained."]),
    ("Is it due? Yes! It is (mostly). \"Really.\" Then stop.",
     ["Is it due?", "Yes!", "It is (mostly).", "\"Really.\"", "Then stop."]),
    ("我喜欢猫。你呢？我们走吧！", ["我喜欢猫。", "你呢？", "我们走吧！"]),
    ("今日は晴れです。明日は雨でしょう。", ["今日は晴れです。", "明日は雨でしょう。"]),
    ("「行きます。」と彼は言った。", ["「行きます。」", "と彼は言った。"]),
    ("मैं घर जा रहा हूँ। तुम कहाँ हो? ठीक है।", ["मैं घर जा रहा हूँ।", "तुम कहाँ हो?", "ठीक है।"]),
    ("كيف حالك؟ أنا بخير. شكرا!", ["كيف حالك؟", "أنا بخير.", "شكرا!"]),
    ("کیا حال ہے؟ میں ٹھیک ہوں۔ شکریہ", ["کیا حال ہے؟", "میں ٹھیک ہوں۔", "شکریہ"]),
])
def test_sentences_in_several_scripts(text, expected):
    assert split(text) == expected


def test_cuts_stay_inside_the_span_and_offsets_are_into_the_whole_text():
    text = "Intro. 我喜欢猫。你呢？ Outro. Tail."
    lo, hi = text.index("我"), text.index(" Outro")
    spans = sentence_spans(text, lo, hi)
    assert [text[s:e] for s, e in spans] == ["我喜欢猫。", "你呢？"]
    assert all(lo < c < hi for c in sentence_cuts(text, lo, hi))


ALPHABET = st.sampled_from(list("ab AZ.!?…\n\t。？！।؟۔」)\"'") + ["e.g.", "Mr.", "猫", "हो", "حال"])


@given(st.lists(ALPHABET, max_size=60).map("".join))
def test_spans_are_exact_ordered_trimmed_and_cover_every_visible_character(text):
    spans = sentence_spans(text)
    covered = set()
    for (s, e), nxt in zip(spans, spans[1:] + [(len(text), len(text))]):
        assert 0 <= s < e <= nxt[0]
        piece = text[s:e]
        assert piece == piece.strip()
        covered.update(range(s, e))
    assert {i for i, c in enumerate(text) if not c.isspace()} <= covered
