import json

import pytest

from ragkit.evaluate import build_golden, load_course, validate_golden
from ragkit.text import load_corpus
from ragkit.text.locate import locate
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

from ragkit.evaluate import GoldenError, check_questions, read_golden  # noqa: E402
from ragkit.evaluate.questions import parse_records  # noqa: E402

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
    from ragkit.evaluate import load_folder

    bench, errors, problems = load_folder(ROOT / "data" / "corpus",
                                          ROOT / "data" / "golden" / "questions.jsonl")
    assert errors == [] and problems == []
    assert len(bench.queries) == len(load_course().queries)
    assert sum(not q.gold for q in bench.queries) == sum(q.type == "refusal"
                                                          for q in bench.queries)


# ------------------------------------- issue 36: evidence, offsets, CSV quotes, Unicode forms

import unicodedata  # noqa: E402
import warnings  # noqa: E402

from ragkit.evaluate import GoldenWarning, load_folder  # noqa: E402


def test_duplicate_and_overlapping_evidence_is_merged_with_a_warning_naming_the_question(
        tmp_path):
    p = write_jsonl(tmp_path / "q.jsonl", [
        q("twice", [{"quote": "Gold tier: 14 days."}, {"quote": "Gold tier: 14 days."}]),
        q("overlap", [{"quote": "Silver tier: 7"}, {"quote": "7 days. Bronze"}]),
        q("apart", [{"quote": "Gold tier"}, {"quote": "Bronze: none."}])])
    with pytest.warns(GoldenWarning) as caught:
        records, problems = check_questions(p, DOCS)
    assert problems == [] and len(records) == 3
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2
    assert f"{p}:line 1 (twice): evidence 1 and 2 overlap" in messages[0]
    assert f"{p}:line 2 (overlap): evidence 1 and 2 overlap" in messages[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GoldenWarning)
        golden = tmp_path / "golden.jsonl"
        build_golden(p, DOCS, golden)
    with pytest.warns(GoldenWarning) as caught:
        queries = {x.id: x for x in read_golden(golden, DOCS)}
    assert [str(w.message).split(": evidence")[0] for w in caught] == [
        f"{golden}:line 1 (twice)", f"{golden}:line 2 (overlap)"]
    text = DOCS["d"].text
    assert [text[g.start:g.end] for g in queries["twice"].gold] == ["Gold tier: 14 days."]
    assert [text[g.start:g.end] for g in queries["overlap"].gold] == ["Silver tier: 7 days. Bronze"]
    assert len(queries["apart"].gold) == 2


FRONT = "---\ntitle: Refunds\nproduct: suite\n---\n"
BODY = "# Refunds\n\nGold tier: 14 days. Silver tier: 7 days.\n"


def _front_matter_corpus(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / "refunds.md").write_text(FRONT + BODY, encoding="utf-8")
    return d


def test_span_offsets_into_the_raw_file_are_an_error_saying_offsets_exclude_front_matter(
        tmp_path):
    corpus = _front_matter_corpus(tmp_path)
    raw = FRONT + BODY
    s = raw.index("Silver tier")
    good = BODY.index("Gold tier")
    p = write_jsonl(tmp_path / "q.jsonl", [
        q("ok", [{"doc_id": "refunds", "start": good, "end": good + 9, "quote": "Gold tier"}]),
        q("raw", [{"doc_id": "refunds", "start": s, "end": s + 11, "quote": "Silver tier"}])])
    bench, errors, problems = load_folder(corpus, p)
    assert errors == [] and [x.id for x in bench.queries] == ["ok"]
    [prob] = problems
    assert prob.startswith(f"{p}:line 2 (raw): ")
    assert "offsets are into the document's text as parsed" in prob
    assert "front matter" in prob and f"[{s - len(FRONT)}, {s - len(FRONT) + 11})" in prob


def test_a_span_without_its_quote_past_the_parsed_text_but_inside_the_raw_file(tmp_path):
    corpus = _front_matter_corpus(tmp_path)
    end = len(FRONT + BODY) - 1
    p = write_jsonl(tmp_path / "q.jsonl", [
        q("raw", [{"doc_id": "refunds", "start": end - 8, "end": end}])])
    bench, errors, problems = load_folder(corpus, p)
    assert bench.queries == [] and len(problems) == 1
    assert "(raw)" in problems[0] and "not inside" in problems[0]
    assert "front matter" in problems[0]


def test_a_span_without_its_quote_in_a_document_with_front_matter_warns(tmp_path):
    corpus = _front_matter_corpus(tmp_path)
    s = BODY.index("Gold tier")
    p = write_jsonl(tmp_path / "q.jsonl", [
        q("noquote", [{"doc_id": "refunds", "start": s, "end": s + 9}])])
    with pytest.warns(GoldenWarning, match=r"line 1 \(noquote\).*front matter"):
        bench, errors, problems = load_folder(corpus, p)
    assert problems == [] and [x.id for x in bench.queries] == ["noquote"]


def test_an_unclosed_csv_quote_is_reported_at_its_line_and_the_rows_after_it_are_read(
        tmp_path):
    p = tmp_path / "q.csv"
    p.write_text("id,question,quote,doc_id\n"
                 "q1,Gold?,Gold tier: 14 days.,d\n"
                 'q2,Silver?,"Silver tier: 7 days.,d\n'
                 "q3,Bronze?,Bronze: none.,d\n"
                 "q4,Gold again?,Gold tier,d\n", encoding="utf-8")
    records, problems = check_questions(p, DOCS)
    assert [r["id"] for r in records] == ["q1", "q3", "q4"]
    [prob] = problems
    assert prob.line == 3 and "quote" in prob.message and "never closed" in prob.message


def test_a_csv_quote_closed_inside_a_later_row_is_reported_at_the_line_it_opened(tmp_path):
    p = tmp_path / "q.csv"
    p.write_text("id,question,quote,doc_id\n"
                 'q1,Gold?,"Gold tier: 14 days.,d\n'
                 "q2,Silver?,Silver tier: 7 days.,d\n"
                 'q3,Bronze?,"Bronze: none.",d\n', encoding="utf-8")
    records, problems = check_questions(p, DOCS)
    assert [r["id"] for r in records] == ["q2", "q3"]
    assert [(x.line, "never closed" in x.message) for x in problems] == [(2, True)]


def test_a_quoted_csv_field_over_several_lines_is_still_one_field(tmp_path):
    p = tmp_path / "q.csv"
    p.write_text('id,question,quote,doc_id\nq1,"Gold,\nor silver?",Gold tier: 14 days.,d\n'
                 "q2,Silver?,Silver tier,d\n", encoding="utf-8")
    records, problems = check_questions(p, DOCS)
    assert problems == [] and records[0]["question"] == "Gold,\nor silver?"
    assert [r["id"] for r in records] == ["q1", "q2"]


def _nfd(s):
    return unicodedata.normalize("NFD", s)


def _nfc(s):
    return unicodedata.normalize("NFC", s)


CAFE = _nfc("Café crème: 3 € le matin. Thé: 2 €.")


@pytest.mark.parametrize("doc_form, quote_form", [(_nfc, _nfd), (_nfd, _nfc), (_nfd, _nfd)])
def test_a_quote_is_found_whatever_the_unicode_form_of_quote_and_document(
        tmp_path, doc_form, quote_form):
    text = doc_form(CAFE)
    docs = {"menu": Document("menu", text)}
    p = write_jsonl(tmp_path / "q.jsonl", [
        q("a", [{"doc_id": "menu", "quote": quote_form("Café crème: 3 €")}]),
        q("b", [{"doc_id": quote_form("menu"), "quote": quote_form("Thé:   2 €")}])])
    records, problems = check_questions(p, docs)
    assert problems == []
    for r, want in zip(records, ("Café crème: 3 €", "Thé: 2 €")):
        [e] = r["evidence"]
        assert text[e["start"]:e["end"]] == e["quote"]  # offsets into the text as it is
        assert _nfc(e["quote"]) == want


def test_ids_in_nfc_and_nfd_are_one_id_and_match_documents(tmp_path):
    docs = {_nfc("café"): Document(_nfc("café"), CAFE)}
    p = write_jsonl(tmp_path / "q.jsonl", [
        q(_nfc("qé"), [{"doc_id": _nfd("café"), "quote": "Thé"}]),
        q(_nfd("qé"), [{"doc_id": _nfc("café"), "quote": "crème"}])])
    records, problems = check_questions(p, docs)
    assert [r["id"] for r in records] == [_nfc("qé")]
    assert [x.line for x in problems] == [2] and "duplicate id" in problems[0].message


def test_a_document_file_named_in_nfd_has_an_nfc_id(tmp_path):
    d = tmp_path / "docs"
    d.mkdir()
    (d / (_nfd("menu-café") + ".md")).write_text(CAFE + "\n", encoding="utf-8")
    p = write_jsonl(tmp_path / "q.jsonl", [q("a", [{"doc_id": _nfc("menu-café"),
                                                    "quote": "Thé"}])])
    bench, errors, problems = load_folder(d, p)
    assert errors == [] and problems == [] and [x.id for x in bench.documents] == [
        _nfc("menu-café")]


def test_a_stored_golden_file_with_raw_file_offsets_says_offsets_exclude_front_matter(
        tmp_path):
    corpus = _front_matter_corpus(tmp_path)
    docs = load_corpus(corpus).by_id()
    s = (FRONT + BODY).index("Silver tier")
    p = write_jsonl(tmp_path / "golden.jsonl", [{
        "id": "raw", "question": "?", "type": "lookup",
        "evidence": [{"doc_id": "refunds", "start": s, "end": s + 11, "quote": "Silver tier"}]}])
    at = BODY.index("Refunds")  # its raw offsets are inside the parsed text, at other text
    assert at + len(FRONT) + 7 <= len(BODY)
    q = write_jsonl(tmp_path / "golden2.jsonl", [{
        "id": "raw", "question": "?", "type": "lookup",
        "evidence": [{"doc_id": "refunds", "start": at + len(FRONT), "end": at + len(FRONT) + 7,
                      "quote": "Refunds"}]}])
    for path, start, n in ((p, s, 11), (q, at + len(FRONT), 7)):
        [error] = validate_golden(path, docs)
        assert error.startswith(f"{path}:1: ") and "front matter" in error
        assert f"this quote is the span [{start - len(FRONT)}, {start - len(FRONT) + n})" in error


@pytest.mark.parametrize("last", ['q2,Silver?,"Silver tier: 7 days.,d\n',
                                  'q2,Silver?,"Silver tier: 7 days.,d'])
def test_an_unclosed_csv_quote_on_the_last_line_says_so(tmp_path, last):
    p = tmp_path / "q.csv"
    p.write_text("id,question,quote,doc_id\nq1,Gold?,Gold tier: 14 days.,d\n" + last,
                 encoding="utf-8")
    records, problems = check_questions(p, DOCS)
    assert [r["id"] for r in records] == ["q1"]
    assert [(x.line, "never closed: it runs to the end of the file" in x.message)
            for x in problems] == [(3, True)]


def test_quotes_that_close_on_their_own_line_are_read_as_before(tmp_path):
    """Only a quote still open at the end of its line is checked (as the csv module reads
    '"Gold" tier' today: Gold tier)."""
    p = tmp_path / "q.csv"
    p.write_text('id,question,quote,doc_id\nq1,"Gold" tier?,Gold tier: 14 days.,d\n',
                 encoding="utf-8")
    records, problems = check_questions(p, DOCS)
    assert problems == [] and records[0]["question"] == "Gold tier?"
