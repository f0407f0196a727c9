"""`ragkit.text.locate.locate` is ragkit's one search for text in a document (issue 33: one
home each): the golden files anchor quotes with it (words with whitespace between them) and the
baseline chunkers find their splitters' pieces with it (``dropped_spaces``: whitespace between
two words may be gone, as chonkie re-joins some code).

Before issue 33 each had its own function; `_golden_rule` and `_piece_rule` are frozen copies
of those two, and the real data must give the same spans with the one function as with them:
every quote of the course's questions file, every gold span of Chroma's and Anthropic's sets
(with ``RAGKIT_BENCHMARKS_DIR``; skipped without), and every chunk the seven simple baselines
make of the course corpus.
"""

import re
import unicodedata

import pytest

from ragkit.text.locate import locate, nfc

from conftest import needs_benchmarks


def _golden_rule(text: str, quote: str) -> list[tuple[int, int]]:
    """The golden files' search before issue 33 (NFC texts: all of the real data)."""
    quote = unicodedata.normalize("NFC", quote).strip()
    if not quote:
        return []
    hits, pos = [], text.find(quote)
    while pos != -1:
        hits.append((pos, pos + len(quote)))
        pos = text.find(quote, pos + 1)
    if hits:
        return hits
    pattern = r"\s+".join(re.escape(w) for w in quote.split())
    return [(m.start(), m.end()) for m in re.finditer(pattern, text)]


def _piece_rule(text: str, piece: str, cursor: int = 0) -> tuple[int, int] | None:
    """`ragkit.chunkers.baselines.locate` before issue 33."""
    piece = piece.strip()
    if not piece:
        return None
    pos = text.find(piece, cursor)
    if pos != -1:
        return pos, pos + len(piece)
    m = re.compile(r"\s*".join(re.escape(w) for w in piece.split())).search(text, cursor)
    return (m.start(), m.end()) if m else None


@pytest.mark.parametrize("text, quote, start, dropped, limit, expected", [
    ("a  b\nc", "a b c", 0, False, None, [(0, 6)]),
    ("ab a b", "a b", 0, False, None, [(3, 6)]),          # exact first
    ("ab a\tb", "a b", 0, False, None, [(3, 6)]),         # whitespace between words: \s+
    ("ab a\tb", "a b", 0, True, None, [(0, 2), (3, 6)]),  # or none at all
    ("x y x y", "x y", 1, False, None, [(4, 7)]),         # from `start` on
    ("x y x y", "x y", 0, False, 1, [(0, 3)]),            # the first one
    ("abc", "", 0, False, None, []),
])
def test_the_rule(text, quote, start, dropped, limit, expected):
    assert locate(text, quote, start, dropped_spaces=dropped, limit=limit) == expected


def test_a_cursor_counts_characters_of_a_document_written_in_nfd():
    text = unicodedata.normalize("NFD", "Café prices. Café hours.")
    assert text != nfc(text)
    [(s, e)] = locate(text, "Café hours")
    assert nfc(text[s:e]) == "Café hours"
    assert locate(text, "Café", s) == [(s, s + 5)]
    assert locate(text, "Café", s + 1) == []


def test_every_course_quote_is_found_where_it_was():
    from ragkit.config import get_settings
    from ragkit.evaluate import load_course
    from ragkit.evaluate.questions import read_records

    course = load_course()
    docs = course.docs_by_id()
    quotes = [(ev.get("doc_id"), ev["quote"])
              for _, rec in read_records(get_settings().data_dir / "golden" / "questions.jsonl")
              for ev in rec.get("evidence") or [] if ev.get("quote")]
    assert len(quotes) > 250
    for doc_id, quote in quotes:
        for d in ([docs[doc_id]] if doc_id else course.documents):
            assert locate(d.text, quote) == _golden_rule(d.text, quote), (d.id, quote)


@needs_benchmarks()
@pytest.mark.parametrize("name", ["chroma", "anthropic"])
def test_every_benchmark_gold_span_is_found_where_it_was(name):
    from ragkit.evaluate import load

    bench = load(name)
    docs = bench.docs_by_id()
    n = 0
    for q in bench.queries:
        for g in q.gold:
            text = docs[g.doc_id].text
            quote = text[g.start:g.end]
            assert locate(text, quote) == _golden_rule(text, quote), (q.id, g)
            n += 1
    assert n > 240


def test_the_baselines_locate_their_pieces_where_they_did(monkeypatch):
    """The seven simple baselines on the course corpus: the same chunks (ids, offsets) with
    the one `locate` as with the piece rule of before."""
    pytest.importorskip("langchain_text_splitters")
    pytest.importorskip("chonkie")
    import ragkit.chunkers.baselines as baselines
    from ragkit.evaluate import load_course
    from ragkit.experiments.design import simple_baselines

    docs = load_course().documents
    now = [[(c.id, c.start, c.end) for c in ch.chunk_all(docs)] for ch in simple_baselines()]
    monkeypatch.setattr(baselines, "first_span", _piece_rule)
    before = [[(c.id, c.start, c.end) for c in ch.chunk_all(docs)] for ch in simple_baselines()]
    assert [len(x) for x in now] == [len(x) for x in before]
    assert now == before
    assert sum(map(len, now)) > 2000
