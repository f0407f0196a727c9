import json

import pytest

from ragkit.benchmarks import load_course
from ragkit.documents import load_corpus
from ragkit.golden import build_golden, locate, validate_golden
from ragkit.types import Document

from conftest import ROOT


def test_course_golden_set_validates_against_the_corpus():
    docs = load_corpus(ROOT / "data" / "corpus").by_id()
    assert len(docs) >= 40
    assert validate_golden(ROOT / "data" / "golden" / "golden.jsonl", docs) == []
    bench = load_course()
    assert len(bench.queries) >= 150
    types = {q.type for q in bench.queries}
    assert types == {"lookup", "aggregation", "comparison", "inference", "ambiguous", "refusal"}
    assert all(not q.gold for q in bench.queries if q.type == "refusal")
    assert any(q.context for q in bench.queries)


def test_golden_file_is_what_the_questions_build_to(tmp_path):
    """golden.jsonl is generated from questions.jsonl, never edited by hand."""
    docs = load_corpus(ROOT / "data" / "corpus").by_id()
    build_golden(ROOT / "data" / "golden" / "questions.jsonl", docs, tmp_path / "g.jsonl")
    assert (tmp_path / "g.jsonl").read_text() == (ROOT / "data/golden/golden.jsonl").read_text()


def test_staged_failures_point_at_real_questions():
    staged = json.loads((ROOT / "data" / "golden" / "staged_failures.json").read_text())
    ids = {q.id for q in load_course().queries}
    assert len(staged) == 8 and all(s["question_id"] in ids for s in staged)


def test_validator_catches_a_shifted_span(tmp_path):
    docs = {"d": Document("d", "Refunds are available within 14 days.")}
    rec = {"id": "q1", "question": "?", "type": "lookup",
           "evidence": [{"doc_id": "d", "start": 1, "end": 8, "quote": "Refunds"}]}
    p = tmp_path / "g.jsonl"
    p.write_text(json.dumps(rec) + "\n")
    errors = validate_golden(p, docs)
    assert len(errors) == 1 and "g.jsonl:1" in errors[0] and "not the quoted text" in errors[0]


def test_missing_and_repeated_quotes_are_reported_with_their_line(tmp_path):
    docs = {"d": Document("d", "Gold: 14 days. Silver: 7 days. Gold: 14 days.")}
    lines = [{"id": "ok", "question": "?", "evidence": [{"doc_id": "d", "quote": "Silver: 7"}]},
             {"id": "twice", "question": "?", "evidence": [{"doc_id": "d", "quote": "Gold: 14"}]},
             {"id": "gone", "question": "?", "evidence": [{"doc_id": "d", "quote": "Bronze"}]}]
    q = tmp_path / "q.jsonl"
    q.write_text("".join(json.dumps(x) + "\n" for x in lines))
    records, problems = build_golden(q, docs)
    assert [r["id"] for r in records] == ["ok"]
    assert [(p.line, p.question_id) for p in problems] == [(2, "twice"), (3, "gone")]
    assert "2 times" in problems[0].message and "not found" in problems[1].message


@pytest.mark.parametrize("text, quote, expected", [
    ("a  b\nc", "a b c", [(0, 6)]),
    ("abc", "abc", [(0, 3)]),
    ("abc", "", []),
])
def test_locate(text, quote, expected):
    assert locate(text, quote) == expected
