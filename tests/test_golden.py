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


# --------------------------------------------------------------------- issue 19: validation

from ragkit.golden import GoldenError, check_questions, parse_records, read_golden  # noqa: E402

DOCS = {"d": Document("d", "Gold tier: 14 days. Silver tier: 7 days. Bronze: none."),
        "e": Document("e", "Support hours\u2028weekdays only.")}


def write_jsonl(path, records, bom=False):
    body = "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n"
                   for r in records)
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + body.encode("utf-8"))
    return path


def q(i, ev, **kw):
    return {"id": i, "question": f"Q {i}?", "evidence": ev, **kw}


GOLD = [{"doc_id": "d", "quote": "Gold tier: 14 days."}]
SILVER = [{"quote": "Silver tier: 7 days."}]


@pytest.mark.parametrize("first, second", [("a", "a"), (1, "1"), (7, 7)])
def test_duplicate_ids_are_an_error_naming_both_lines(tmp_path, first, second):
    p = write_jsonl(tmp_path / "q.jsonl", [q(first, GOLD), q("other", SILVER), q(second, SILVER)])
    records, problems = check_questions(p, DOCS)
    assert [r["id"] for r in records] == [str(first), "other"]
    [prob] = problems
    assert prob.line == 3 and "duplicate id" in prob.message and "line 1" in prob.message


def test_two_csv_rows_for_one_question_are_a_duplicate(tmp_path):
    p = tmp_path / "q.csv"
    p.write_text("id,question,quote,doc_id\nq1,Gold?,Gold tier: 14 days.,d\n"
                 "q1,Gold?,Silver tier: 7 days.,d\n", encoding="utf-8")
    records, problems = check_questions(p, DOCS)
    assert len(records) == 1 and [(x.line, x.question_id) for x in problems] == [(3, "q1")]
    assert "line 2" in problems[0].message


@pytest.mark.parametrize("ev, needle", [
    ({"doc_id": "d", "start": 0, "end": 5, "quote": "Silver"}, "not the quote"),
    ({"doc_id": "d", "start": 10, "end": 10_000}, "not inside"),
    ({"doc_id": "d", "start": 9, "end": 3}, "not inside"),
    ({"doc_id": "d", "start": "0", "end": "5"}, "integer"),
    ({"doc_id": "d", "start": True, "end": 5}, "integer"),
    ({"doc_id": "nope", "start": 0, "end": 5}, "unknown document 'nope'"),
    ({"doc_id": "nope", "quote": "Gold"}, "unknown document 'nope'"),
    ({"start": 0, "end": 5}, "needs its doc_id"),
])
def test_spans_and_documents_are_validated(tmp_path, ev, needle):
    p = write_jsonl(tmp_path / "q.jsonl", [q("ok", GOLD), q("bad", [ev])])
    records, problems = check_questions(p, DOCS)
    assert [r["id"] for r in records] == ["ok"]
    assert len(problems) == 1 and problems[0].line == 2 and needle in problems[0].message


def test_a_valid_span_is_kept_with_or_without_its_quote(tmp_path):
    s = DOCS["d"].text.index("Bronze")
    p = write_jsonl(tmp_path / "q.jsonl", [
        q("a", [{"doc_id": "d", "start": s, "end": s + 6, "quote": "Bronze"}]),
        q("b", [{"doc_id": "d", "start": s, "end": s + 6}])])
    records, problems = check_questions(p, DOCS)
    assert problems == [] and [r["evidence"][0]["quote"] for r in records] == ["Bronze"] * 2


def test_csv_with_a_byte_order_mark_keeps_its_id_column(tmp_path):
    p = tmp_path / "q.csv"
    p.write_bytes(b"\xef\xbb\xbfid,question,quote,doc_id\nq1,Gold?,Gold tier: 14 days.,d\n")
    records, problems = check_questions(p, DOCS)
    assert problems == [] and [r["id"] for r in records] == ["q1"]


def test_questions_without_evidence_and_short_rows_are_reported(tmp_path):
    p = write_jsonl(tmp_path / "q.jsonl", [q("a", GOLD), q("none", []),
                                           q("ref", [], type="refusal")])
    records, problems = check_questions(p, DOCS)
    assert [r["id"] for r in records] == ["a", "ref"]
    assert [(x.line, x.question_id) for x in problems] == [(2, "none")]
    assert "no evidence" in problems[0].message
    c = tmp_path / "q.csv"
    c.write_text("id,question,quote,doc_id\nq1,Gold?,Gold tier: 14 days.,d\nq2,Short?\n"
                 "q3,Nothing?,,\n", encoding="utf-8")
    records, problems = check_questions(c, DOCS)
    assert [r["id"] for r in records] == ["q1"]
    assert [(x.line, x.question_id) for x in problems] == [(3, "q2"), (4, "q3")]
    assert "2 field(s)" in problems[0].message and "no evidence" in problems[1].message


def test_a_golden_file_with_line_separators_reads_back(tmp_path):
    src = write_jsonl(tmp_path / "q.jsonl", [
        q("a", [{"quote": "hours\u2028weekdays"}], answer="x\u2029y\u0085z")])
    out = tmp_path / "golden.jsonl"
    records, problems = build_golden(src, DOCS, out)
    assert problems == [] and "\u2028" in out.read_text(encoding="utf-8")
    assert [x.id for x in read_golden(out, DOCS)] == ["a"]
    assert validate_golden(out, DOCS) == []


@pytest.mark.parametrize("line, needle", [
    ('{"id": "x", "question": ', "not valid JSON"),
    ('[1, 2]', "expected a JSON object"),
    ('{"id": "x", "evidence": [{"quote": "Bronze"}]}', "no question text"),
    ('{"id": "x", "question": "?", "evidence": "Bronze"}', "evidence must be a list"),
    ('{"id": "x", "question": "?", "evidence": ["Bronze"]}', "must be an object"),
])
def test_malformed_lines_are_reported_not_raised(tmp_path, line, needle):
    p = write_jsonl(tmp_path / "q.jsonl", [q("a", GOLD), line, q("b", SILVER)], bom=True)
    records, problems = check_questions(p, DOCS)
    assert [r["id"] for r in records] == ["a", "b"]
    assert len(problems) == 1 and problems[0].line == 2 and needle in problems[0].message


@pytest.mark.parametrize("name, data, needle", [
    ("q.jsonl", b'[{"id": "a", "question": "?"}]', "JSON array"),
    ("q.csv", "id,question,quote\nq1,Caf\xe9?,Gold\n".encode("latin-1"), ":2: not valid UTF-8"),
    ("q.jsonl", '{"id": "a"}\n'.encode("utf-16-le"), "UTF-16"),
    ("q.csv", b"id,quote\nq1,Gold\n", "no 'question' column"),
])
def test_unreadable_golden_files_are_one_clear_error(tmp_path, name, data, needle):
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(GoldenError, match=None) as e:
        check_questions(p, DOCS)
    assert str(e.value).startswith(f"{p}:") and needle in str(e.value)


def test_parse_records_splits_on_newlines_only(tmp_path):
    p = write_jsonl(tmp_path / "q.jsonl", [q("a\u2028b", GOLD), q("c\u0085d", GOLD)])
    rows, problems = parse_records(p)
    assert problems == [] and [n for n, _ in rows] == [1, 2]


def test_validate_golden_catches_ids_1_and_string_1(tmp_path):
    s = DOCS["d"].text.index("Bronze")
    ev = [{"doc_id": "d", "start": s, "end": s + 6, "quote": "Bronze"}]
    p = write_jsonl(tmp_path / "g.jsonl", [
        {"id": 1, "question": "?", "type": "lookup", "evidence": ev},
        {"id": "1", "question": "?", "type": "lookup", "evidence": ev},
        {"id": "2", "question": "?", "type": "lookup",
         "evidence": [{**ev[0], "start": "0"}]}])
    errors = validate_golden(p, DOCS)
    assert any(":2: duplicate id '1' (also on line 1)" in e for e in errors)
    assert any(":3: bad span" in e for e in errors)


def test_the_course_questions_load_as_before():
    """Notebook 08 runs on the course's own questions: nothing may be dropped."""
    from ragkit.benchmarks import load_folder

    bench, errors, problems = load_folder(ROOT / "data" / "corpus",
                                          ROOT / "data" / "golden" / "questions.jsonl")
    assert errors == [] and problems == []
    assert len(bench.queries) == len(load_course().queries)
    assert sum(not q.gold for q in bench.queries) == sum(q.type == "refusal"
                                                          for q in bench.queries)
