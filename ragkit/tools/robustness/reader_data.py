"""Reader data: odd file names printed escaped, lone surrogates in questions, an option given
twice, ids that are not ids, evidence in a skipped file, front matter that expands past its
cap, an index of another version of the corpus.

The cases of issue 51 that no other area holds, each through the real command unless said:
a file name with a terminal escape (``\\x1b[2J``), a newline or bytes that are not UTF-8 is
printed escaped and its line stays one line; a question whose text or id holds a lone
surrogate (valid JSON, ``"\\ud800"``) is skipped naming its line, the others scored; a
single-value option given twice (``--golden a --golden b``) is a usage error naming it; an
id that is a list, an object, ``true`` or holds a zero-width space is refused (in process);
evidence in a file the load skipped names that file and its reason; front matter whose
aliases expand past the cap skips that file only; ``eval --index`` on an index built from
another version of the corpus, or with a truncated ``index.faiss``, is one line, exit 3.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from .base import Area, Context, expect, one_line_error, run_cli
from .golden import GOOD_QUESTIONS, corpus_with_questions, write_questions


def run(ctx: Context) -> Area:
    return reader_data_area(ctx.folder, quick=ctx.quick)


def _no_traceback(out) -> None:
    expect("Traceback" not in out.stderr + out.stdout, f"a traceback: {out.stderr[-400:]}")


def reader_data_area(folder: Path, quick: bool = False) -> Area:
    area = Area("reader data")
    docs, questions = corpus_with_questions(folder)

    def twice(args: list[str], flag: str):
        return lambda: one_line_error(run_cli(args), 2, flag, "more than once")
    area.case("eval --golden a --golden b: a usage error naming it (b alone was used)",
              twice(["eval", "--corpus", str(docs), "--golden", str(questions), "--golden",
                     str(questions)], "--golden"))
    area.case("chunk --out a --out b: a usage error naming it",
              twice(["chunk", str(docs), "--out", str(folder / "a"), "--out",
                     str(folder / "b")], "--out"))
    area.case("bench ondisk --out a --out b: a usage error naming it",
              twice(["bench", "ondisk", "--out", str(folder / "a"), "--out",
                     str(folder / "b")], "--out"))
    area.case("odd file names (a terminal escape, a newline, not UTF-8) printed escaped, "
              "one line each", lambda: _odd_names(folder / "names"))
    area.case("ids that are not ids (a list, an object, true, a zero-width space) refused",
              _bad_ids)
    area.case("a lone surrogate in a question's text or id: that question skipped, naming "
              "its line; the others scored", lambda: _surrogates(folder, docs))
    if quick:
        return area
    area.case("evidence in a skipped file names that file and its reason",
              lambda: _evidence_in_skipped(folder / "skipped"))
    area.case("front matter aliases past the cap: that file skipped, the folder chunked",
              lambda: _bomb(folder / "bomb"))
    area.case("eval --index on an edited corpus, and with a truncated index.faiss: exit 3, "
              "one line", lambda: _stale_index(folder / "index"))
    return area


def _odd_names(root: Path) -> None:
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nGold pays 2%.\n")
    for name in ("clear\x1b[2Jscreen.md", "new\nline.md"):
        (root / name).write_bytes(b"\x00" * 16)  # binary: skipped, so named in a problem
    (root / os.fsdecode(b"bad\xffname.md")).write_text("# Bad name\n\ntext\n")
    out = run_cli(["chunk", str(root), "--limit", "0"])
    _no_traceback(out)
    expect(out.returncode == 1, f"exit {out.returncode}: {out.stderr[-300:]}")
    expect("\x1b" not in out.stdout + out.stderr, "a terminal escape was printed raw")
    lines = out.stderr.splitlines()
    for needle in ("clear\\x1b[2Jscreen.md:1: binary", "new\\nline.md:1: binary",
                   "bad\\udcffname.md:1: the name is not valid UTF-8"):
        expect(any(needle in line for line in lines), f"{needle!r} not one line in "
               f"{out.stderr[-400:]!r}")


def _bad_ids() -> None:
    import tempfile

    from ...evaluate.golden import check_questions
    from ...types import Document

    docs = {"refunds": Document("refunds", "Gold tier: 14 days.\n")}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "q.jsonl"
        path.write_text("".join(json.dumps({"id": qid, "question": "Gold?", "evidence": [
            {"quote": "Gold tier"}]}) + "\n" for qid in (["x"], {"a": 1}, True, "g\u200b1",
                                                         "g1")))
        records, problems = check_questions(path, docs)
    expect([r["id"] for r in records] == ["g1"], f"kept {[r['id'] for r in records]}")
    got = [str(p) for p in problems]
    expect(len(got) == 4 and all("id" in p for p in got), f"problems: {got}")
    expect("U+200B" in got[3], f"the zero-width space not named: {got[3]}")


def _surrogates(folder: Path, docs: Path) -> None:
    path = folder / "surrogates.jsonl"
    good = json.dumps(GOOD_QUESTIONS[0])
    path.write_text('{"id": "s1", "question": "surrogate \\ud800 here", "evidence": '
                    '[{"quote": "Gold tier"}]}\n'
                    '{"id": "s\\udc80", "question": "Silver?", "evidence": '
                    '[{"quote": "Silver tier"}]}\n' + good + "\n")
    rows = folder / "surrogate-rows.jsonl"
    out = run_cli(["eval", "--corpus", str(docs), "--golden", str(path), "--results",
                   str(rows), "--strategies", "recursive:250/0"])
    _no_traceback(out)
    expect(out.returncode == 1, f"exit {out.returncode}: {out.stderr[-300:]}")
    for line in ("line 1 (s1)", "line 2 (s\\udc80)"):
        expect(any(line in x and "lone surrogate" in x for x in out.stderr.splitlines()),
               f"{line!r} not reported: {out.stderr[-400:]}")
    scored = {json.loads(x)["n_queries"] for x in rows.read_text().splitlines() if x.strip()}
    expect(scored == {1}, f"questions scored: {scored}")


def _evidence_in_skipped(root: Path) -> None:
    docs, _ = corpus_with_questions(root)
    (docs / "latin1.md").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    questions = write_questions(root, "skipped-q", [GOOD_QUESTIONS[0], {
        "id": "l1", "question": "Coffee?", "evidence": [{"doc_id": "latin1", "quote": "au lait"}]
    }], "jsonl")
    out = run_cli(["eval", "--corpus", str(docs), "--golden", str(questions), "--results",
                   str(root / "rows.jsonl"), "--strategies", "recursive:250/0"])
    _no_traceback(out)
    expect(out.returncode == 1, f"exit {out.returncode}: {out.stderr[-300:]}")
    line = [x for x in out.stderr.splitlines() if "(l1)" in x]
    expect(bool(line) and "'latin1' was skipped" in line[0] and "not valid UTF-8" in line[0],
           f"not named as skipped: {line or out.stderr[-300:]}")


def _bomb(root: Path) -> None:
    from .folders import yaml_bomb

    root.mkdir()
    (root / "good.md").write_text("# Good\n\nGold pays 2%.\n")
    (root / "bomb.md").write_bytes(yaml_bomb(9))
    out = run_cli(["chunk", str(root), "--limit", "0"], timeout=120)
    _no_traceback(out)
    expect(out.returncode == 1, f"exit {out.returncode}: {out.stderr[-300:]}")
    expect("bomb.md:1: front matter expands to more than" in out.stderr,
           f"not skipped with its reason: {out.stderr[-300:]}")


def _stale_index(root: Path) -> None:
    import shutil

    docs, questions = corpus_with_questions(root)
    built = run_cli(["index", str(docs), "--out", str(root / "ix")])
    expect(built.returncode == 0, f"index: exit {built.returncode}: {built.stderr[-300:]}")
    base = ["eval", "--corpus", str(docs), "--golden", str(questions), "--results",
            str(root / "rows.jsonl"), "--index"]
    text = (docs / "refunds.md").read_text()
    (docs / "refunds.md").write_text("Prepended. " * 280 + "\n\n" + text)
    one_line_error(run_cli([*base, str(root / "ix")]), 3, "refunds", "changed")
    (docs / "refunds.md").write_text(text)
    shutil.copytree(root / "ix", root / "cut")
    data = (root / "cut" / "index.faiss").read_bytes()
    (root / "cut" / "index.faiss").write_bytes(data[: len(data) // 2])
    # checked once the model is loaded: its progress bar (tqdm's) off, the error one line
    one_line_error(run_cli([*base, str(root / "cut")], {"TQDM_DISABLE": "1"}), 3,
                   "index.faiss: not a faiss index")
    expect(not (root / "rows.jsonl").exists(), "rows were written")
