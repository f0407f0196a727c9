"""`ragkit smoke-diff BEFORE AFTER`: results rows compared with timestamps and git sha aside."""

import json

import pytest

from ragkit.report.results import SCHEMA
from ragkit.tools.smoke_diff import main, row_differences


def _row(value, sha="abc", ts="2026-01-01T00:00:00", metric="recall@B"):
    row = {f: None for f in SCHEMA}
    row.update(notebook="01", experiment="e", benchmark="b", strategy="s", metric=metric,
               value=value, git_sha=sha, timestamp=ts, params={"size": 250})
    return row


def _write(folder, name, rows):
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_only_timestamps_and_sha_differ_is_identical(tmp_path, capsys):
    _write(tmp_path / "a", "01.jsonl", [_row(0.5), _row(0.25, metric="iou@B")])
    _write(tmp_path / "b", "01.jsonl", [_row(0.25, "def", "2027", metric="iou@B"),
                                        _row(0.5, "def", "2027")])
    assert main([str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "identical rows" in capsys.readouterr().out


def test_a_changed_value_prints_both_rows_and_fails(tmp_path, capsys):
    _write(tmp_path / "a", "01.jsonl", [_row(0.5), _row(0.3, metric="iou@B")])
    _write(tmp_path / "b", "01.jsonl", [_row(0.5), _row(0.31, metric="iou@B")])
    assert main([str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    out = capsys.readouterr().out
    assert "01.jsonl:" in out and '"value": 0.3}' in out and '"value": 0.31}' in out
    minus = [line for line in out.splitlines() if line.strip().startswith("- ")]
    assert len(minus) == 1 and "0.3" in minus[0]
    # a wall-clock metric can be left out
    assert row_differences(tmp_path / "a", tmp_path / "b", ["^iou"]) == {}


def test_a_duplicated_row_and_a_missing_file_count(tmp_path):
    _write(tmp_path / "a", "01.jsonl", [_row(0.5)])
    _write(tmp_path / "b", "01.jsonl", [_row(0.5), _row(0.5)])
    _write(tmp_path / "b", "02.jsonl", [_row(0.1)])
    diff = row_differences(tmp_path / "a", tmp_path / "b")
    assert len(diff["01.jsonl"]) == 1 and diff["01.jsonl"][0].startswith("+ ")
    assert diff["02.jsonl"] == ["only in AFTER"]


def _one_line(capsys, *words):
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert "Traceback" not in err and len(lines) == 1, err
    assert all(w in lines[0] for w in words), err


def test_a_missing_folder_is_an_input_error_not_a_difference(tmp_path, capsys):
    """Exit 1 means "the rows differ" and nothing else; an input ragkit cannot use is 3."""
    assert main([str(tmp_path / "nope"), str(tmp_path)]) == 3
    _one_line(capsys, "nope", "no such folder")
    (tmp_path / "file").write_text("x")
    assert main([str(tmp_path), str(tmp_path / "file")]) == 3
    _one_line(capsys, "file", "not a folder")


@pytest.mark.parametrize("content,words", [
    (b'{"value": 1}\n{not json\n', ["01.jsonl:2", "not a JSON row"]),
    (b'{"value": "\xff"}\n', ["01.jsonl:1", "not UTF-8"]),
    (b"[1, 2]\n", ["01.jsonl:1", "not a JSON row"]),
])
def test_a_corrupt_results_file_is_named_with_its_line(tmp_path, capsys, content, words):
    _write(tmp_path / "a", "01.jsonl", [_row(0.5)])
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "01.jsonl").write_bytes(content)
    assert main([str(tmp_path / "a"), str(tmp_path / "b")]) == 3
    _one_line(capsys, "ragkit smoke-diff:", *words)


def test_an_unreadable_results_file_is_named(tmp_path, capsys):
    _write(tmp_path / "a", "01.jsonl", [_row(0.5)])
    (tmp_path / "b" / "01.jsonl").mkdir(parents=True)  # a folder where a file should be
    assert main([str(tmp_path / "a"), str(tmp_path / "b")]) == 3
    _one_line(capsys, "01.jsonl", "cannot be read")


def test_through_the_command(tmp_path, capsys):
    from ragkit.tools import cli

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.jsonl").write_bytes(b"{oops\n")
    assert cli.main(["smoke-diff", str(tmp_path / "a"), str(tmp_path / "a")]) == 3
    _one_line(capsys, "x.jsonl:1")
