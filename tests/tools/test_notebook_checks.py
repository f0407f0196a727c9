"""The course's notebook rules: no typed numbers and no typed direction words in Markdown prose
(each allowance tested), and the executed copies' closing section, inline figures and quiet
cells."""

import json
from pathlib import Path

import pytest

from ragkit.config import PROJECT_ROOT
from ragkit.tools.notebook_checks import (MAX_OUTPUT_LINES, long_cells, markdown_lines,
                                         output_lines, output_problems, typed_directions,
                                         typed_numbers, unanswered_exercises)

NOTEBOOKS = sorted((PROJECT_ROOT / "notebooks").glob("[0-9][0-9]_*.py"))


def md(*lines: str) -> str:
    return "# %%\nx = 12345\n# %% [markdown]\n" + "\n".join(f"# {line}" for line in lines)


@pytest.mark.parametrize("text, found", [
    ("Recall is 78.3 % here.", ["78.3"]),
    ("It cut 1,000 characters.", ["1,000"]),
    ("Two of 24 questions.", ["24"]),
    ("A setting as code: `k = 5` and `FixedCharChunker(1000, 200)`.", []),
    ("## 2 · A numbered section", []),
    ("1. a list item", []),
    ("As seed 002 argues, and notebooks 02–06 show.", []),
    ("The 2021 schedule and the 2024 one.", []),
    ("A paired 95 % bootstrap interval.", []),
    ("A 95 % of questions answered.", ["95"]),
    ("Seed 002: precision@5 moves from ≈ 0.81 to ≈ 0.88.", []),
    ("Chroma's published recall is 82.4.", []),
    ("Names with digits: all-MiniLM-L6-v2, cl100k_base, recall@5, Pass@20, 512-token.", []),
    ("We measured 0.91. The article reports 0.79.", ["0.91"]),
])
def test_typed_numbers_rules(text, found):
    assert [n for _, n in typed_numbers(md(text))] == found


@pytest.mark.parametrize("text, found", [
    # claims: a direction the prose types instead of reading it from the comparison
    ("Structure beats fixed windows on the course.", ["beats"]),
    ("The small window's lead over the tutorial splitter.", ["lead"]),
    ("Late chunking loses on Chroma.", ["loses"]),
    ("It outperforms the baseline and wins on code.", ["outperforms", "wins"]),
    ("ONNX is better than torch here.", ["better"]),
    ("The reranker is worse on code.", ["worse"]),
    ("The gain is more than noise.", ["more than noise"]),
    ("There is no measurable difference between them.", ["no measurable difference"]),
    ("The preamble measurably helped.", ["measurably"]),
    ("It is ahead of the baseline.", ["ahead of"]),
    ("Does X beat Y? It does beat it.", ["beat"]),      # the answer is a claim
    ("## Structure wins", ["wins"]),                    # a heading that claims
    # allowances
    ("Does structure beat fixed windows?", []),         # a question asks
    ("This notebook asks: **does it beat them, and by how much?** The contenders:", []),
    ("## Is the difference more than noise?", []),       # a question heading
    ('The verdict reads "nothing beats the simple baseline".', []),  # a quoted label
    ("Seed 001 says such chunks retrieve better than windows.", []),  # sourced
    ("Chroma's published table reports that it wins.", []),
    ("How many questions late chunking wins, loses and ties.", []),  # the tally's names
    ("A count of wins / losses / ties per question.", []),
    ("A setting as code: `verdict='beats'`.", []),
    ("```\nit beats them\n```", []),                  # a fenced code block
    ("Choices that lead to a cut.", []),                 # "lead to" is not a lead
])
def test_typed_directions_rules(text, found):
    assert [w for _, w in typed_directions(md(*text.split("\n")))] == found


def test_direction_words_in_code_cells_and_their_output_are_not_prose():
    source = ('# %%\nprint("A beats B")\n# %% [markdown]\n# The next cell says which one\n'
              '# is ahead of the other, from the interval.\n')
    assert typed_directions(source) == [(5, "ahead of")]  # the code cell's "beats" is code
    assert typed_directions(md("First line,", "then it beats the rest.")) == [(5, "beats")]


def test_code_cells_and_line_numbers():
    source = md("First line with no number,", "then 42 on the second line.")
    assert typed_numbers(source) == [(5, "42")]  # the code cell's 12345 is not prose
    assert [n for n, _ in markdown_lines(source)] == [4, 5]


def nb(*cells):
    return {"cells": [{"cell_type": "code", "source": src, "outputs": outs} for src, outs in cells]}


def test_output_problems_flags_each_rule():
    warn = {"output_type": "stream", "name": "stderr",
            "text": "x.py:1: UserWarning: cut\n  warnings.warn(\n" * 2}
    bad = nb(("show_figure(fig, 'f')", []), ("noisy()", [warn]))
    problems = output_problems(bad)
    assert any("4 warning lines" in p for p in problems)
    assert any("What we measured" in p for p in problems)
    assert any("image" in p for p in problems)
    good = nb(("show_figure(fig, 'f')", [{"output_type": "display_data", "data": {"image/png": "AA"}}]),
              ("display(Markdown(what_we_measured(f)))",
               [{"output_type": "display_data", "data": {"text/markdown": "## What we measured\n- a"}}]))
    assert output_problems(good) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_typed_numbers_in_notebook_prose(path):
    found = typed_numbers(path.read_text(encoding="utf-8"))
    assert not found, f"{path.name}: numbers typed in Markdown prose (line, number): {found}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_direction_words_come_from_generated_verdicts(path):
    """Who beats whom is read from a paired interval: a notebook types no direction word in
    its Markdown prose (questions, quotes, sourced claims and the tally's names aside); the
    sentences that state a direction are generated by cells from the comparison."""
    found = typed_directions(path.read_text(encoding="utf-8"))
    assert not found, (f"{path.name}: direction words typed in Markdown prose (line, word); "
                       f"generate those sentences from the comparison: {found}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_executed_notebook_shape(path):
    executed = path.with_suffix(".ipynb")
    problems = output_problems(json.loads(executed.read_text(encoding="utf-8")))
    assert not problems, f"{executed.name}: {problems}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_exercise_section_has_a_collapsed_answers_cell(path):
    line = unanswered_exercises(path.read_text(encoding="utf-8"))
    assert line is None, f"{path.name}:{line}: exercises without a cell tagged \"answers\""


def test_an_answers_cell_before_the_exercises_does_not_count():
    source = '# %% tags=["answers"]\nx = 1\n# %% [markdown]\n# ## Exercises\n# %%\ny = 2\n'
    assert unanswered_exercises(source) == 4


def test_output_lines_counts_what_a_reader_scrolls_past():
    """Stream text and plain text by lines, Markdown by lines, an HTML table by its rows or
    its plain-text lines, whichever a reader sees more of (pandas wraps a wide table's text
    into blocks of columns), an image as nothing; a markdown cell is never counted."""
    stream = {"output_type": "stream", "name": "stdout",
              "text": "".join(f"{i}\n" for i in range(30))}
    table = {"output_type": "execute_result", "data": {
        "text/html": "<table>" + "<tr><td>x</td></tr>" * 12 + "</table>",
        "text/plain": "\n".join("row" for _ in range(10))}}
    wrapped = {"output_type": "execute_result", "data": {
        "text/html": "<table>" + "<tr><td>x</td></tr>" * 12 + "</table>",
        "text/plain": "\n".join("row" for _ in range(45))}}
    figure = {"output_type": "display_data", "data": {"image/png": "AA", "text/plain": "<Figure>"}}
    prose = {"output_type": "display_data", "data": {"text/markdown": "## a\n\nb\nc"}}
    cells = [{"cell_type": "markdown", "source": "x\n" * 99},
             {"cell_type": "code", "source": "", "outputs": [stream, figure]},
             {"cell_type": "code", "source": "", "outputs": [stream, table]},
             {"cell_type": "code", "source": "", "outputs": [prose, table]},
             {"cell_type": "code", "source": "", "outputs": [wrapped]}]
    assert [output_lines(c) for c in cells[1:]] == [30, 42, 16, 45]
    assert long_cells({"cells": cells}) == [(2, 42), (4, 45)]
    assert long_cells({"cells": cells}, limit=10) == [(1, 30), (2, 42), (3, 16), (4, 45)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_cell_prints_more_than_40_lines(path):
    """Issue 50: no wall of output. A long table goes to a file (`ragkit.report.save_table`)
    or a figure, with the few rows the prose reads shown; a chunk is shown around its gold
    (`hits_text(..., lines=N)`)."""
    executed = path.with_suffix(".ipynb")
    long = long_cells(json.loads(executed.read_text(encoding="utf-8")))
    assert not long, (f"{executed.name}: cells whose output shows more than {MAX_OUTPUT_LINES} "
                      "lines (cell index, lines): " + ", ".join(f"({i}, {n})" for i, n in long))


CALL_LINE = __import__("re").compile(
    r"^\d+\. (?:\*If [^*]+:\* )?\*\*(Use|Do not use(?: on [^*]+:)?|Depends:|"
    r"No evidence either way:)\*\* ")


def _closing_lines(nb: dict) -> list[str]:
    """The ranked lines of an executed notebook's "What we measured" section (Markdown output
    of the cell that renders it), before the folded findings."""
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            md = "".join(out.get("data", {}).get("text/markdown", ""))
            if md.startswith("## What we measured"):
                head = md.split("<details>")[0]
                return [x for x in head.splitlines() if x[:1].isdigit()]
    return []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_closing_line_follows_the_one_closing_rule(path):
    """Issue 50's closing rule, read from each executed notebook: every ranked line is one of
    the four calls; it names its benchmark, split, n and encoder; a *use* states its cost; no
    line recommends an oracle; no technique is called two ways."""
    nb = json.loads(path.with_suffix(".ipynb").read_text(encoding="utf-8"))
    calls = {}
    for line in _closing_lines(nb):
        m = CALL_LINE.match(line)
        assert m, f"{path.stem}: not one of the four calls: {line[:120]}"
        assert " on " in line and "n = " in line, f"{path.stem}: no benchmark or n: {line[:120]}"
        assert "held-out half" in line or "all questions" in line, \
            f"{path.stem}: no split named: {line[:120]}"
        if m.group(1) == "Use":  # a recommendation states what it costs
            assert "cost: " in line, f"{path.stem}: a use without its cost: {line[:120]}"
        assert "oracle" not in line.split(" over ")[0].lower(), f"{path.stem}: {line[:120]}"
        # one comparison: the technique over its alternative, on one split with one encoder
        rest = line[m.end():]
        where = __import__("re").search(r"\(([^()]*), n = \d+\)", rest)
        key = (rest.split(": ", 1)[0], where.group(1) if where else "")
        assert calls.setdefault(key, m.group(1)) == m.group(1), \
            f"{path.stem}: {key!r} is called two ways"
