"""JSON a reader supplied: limits that used to be tracebacks are clear errors with a line."""

import json

import pytest

from ragkit.evaluate import check_questions
from ragkit.jsonio import MAX_DEPTH, JsonLimitError, loads
from ragkit.report import ResultsFileError, read_rows
from ragkit.types import Document

HUGE = "9" * 5000
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("text, needle", [
    ('{"n": %s}' % HUGE, "more than 4300 digits"),
    (DEEP, f"deeper than {MAX_DEPTH} levels"),
    ('{"a": %s}' % ('{"b": ' * 5000 + "1" + "}" * 5000), f"deeper than {MAX_DEPTH} levels"),
])
def test_limits_are_a_json_error_with_a_place(text, needle):
    with pytest.raises(json.JSONDecodeError) as e:
        loads(text)
    assert isinstance(e.value, JsonLimitError) and needle in str(e.value)
    assert e.value.lineno == 1


def test_brackets_and_digits_inside_strings_are_not_limits():
    text = json.dumps({"quote": "[" * 1000 + "{" * 1000, "id": HUGE})
    assert loads(text)["id"] == HUGE
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None


@pytest.mark.parametrize("line, needle", [
    ('{"id": %s, "question": "?", "evidence": []}' % HUGE, "4300 digits"),
    ('{"id": "x", "question": "?", "context": %s}' % DEEP, "nested deeper"),
])
def test_a_golden_line_beyond_the_limits_is_a_problem_on_its_line(tmp_path, line, needle):
    docs = {"d": Document("d", "Gold tier: 14 days.")}
    ok = json.dumps({"id": "a", "question": "?", "evidence": [{"quote": "Gold tier"}]})
    p = tmp_path / "q.jsonl"
    p.write_text(ok + "\n" + line + "\n" + ok.replace('"a"', '"b"') + "\n", encoding="utf-8")
    records, problems = check_questions(p, docs)
    assert [r["id"] for r in records] == ["a", "b"]
    assert len(problems) == 1 and problems[0].line == 2 and needle in problems[0].message


@pytest.mark.parametrize("bad", ['{"k": %s}' % HUGE, DEEP])
def test_a_results_file_beyond_the_limits_is_a_results_file_error(tmp_path, bad):
    p = tmp_path / "rows.jsonl"
    p.write_text('{"a": 1}\n' + bad + "\n", encoding="utf-8")
    with pytest.raises(ResultsFileError, match=f"{p}:2: "):
        read_rows(p)
