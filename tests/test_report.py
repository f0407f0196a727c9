"""Findings and tables rendered from numbers, and warnings folded into one line per kind."""

import io
import warnings
from pathlib import Path

import pandas as pd
import pytest

import ragkit
from ragkit.evaluate import paired
from ragkit.report import ci, finding, pct, percent_table, quiet_cells, what_we_measured
from ragkit.report.prose import summarize_warnings, summary_lines


def test_formats():
    assert pct(0.7834) == "78.3 %" and pct(1 / 3, 2) == "33.33 %"
    assert ci(-0.01, 0.032) == "[-1.0, +3.2]"
    # a low end just above 0 (a "beats") is not printed as +0.0; an exact 0 stays +0.0
    assert ci(0.000193, 0.1743) == "[+0.02, +17.4]" and ci(0.0, 0.05) == "[+0.0, +5.0]"


def test_finding_reads_from_the_side_ahead_and_says_no_difference_when_ci_holds_zero():
    a, b = [1, 1, 0, 1] * 20, [0, 1, 0, 0] * 20
    win = finding(paired(a, b), "A", "B", "pass@512")
    assert win.startswith("**A** beats **B** on pass@512 by 50.0 points")
    assert "n = 80; A ahead on 40 questions, behind on 0, tied on 40" in win
    lose = finding(paired(b, a), "B", "A", "pass@512")
    assert lose.startswith("**A** beats **B**") and "A ahead on 40 questions, behind on 0" in lose
    noise = finding(paired([1, 0] * 10, [0, 1] * 10), "A", "B", "recall")
    assert noise.startswith("No measurable difference between **A** and **B** on recall")


def test_closing_section_needs_findings():
    assert what_we_measured(["x", ""]).splitlines() == ["## What we measured", "", "- x"]
    with pytest.raises(ValueError):
        what_we_measured([])


def test_percent_table_formats_shares_and_counts_without_changing_values():
    df = pd.DataFrame({"strategy": ["a", "b"], "recall": [0.5, 0.25], "n_chunks": [10.0, 2.0]})
    html = percent_table(df, counts=["n_chunks"]).to_html()
    assert "50.0%" in html and "25.0%" in html and ">10<" in html
    assert df.recall.tolist() == [0.5, 0.25]



def test_percent_frame_reads_as_plain_text_with_the_glossary_names():
    """A text renderer shows a display's text/plain: a Styler's is its name, a percent_frame's
    is the table, formatted as percent_table formats it, under the glossary's headers."""
    from ragkit.report import percent_frame

    df = pd.DataFrame({"view": ["top 5", "256 tokens"], "recall": [0.5, float("nan")],
                       "pass@k": [1.0, 0.25], "tokens": [912.0, 1256.0]})
    shown = percent_frame(df, shares=["recall", "pass@k"], counts=["tokens"])
    text = repr(shown)
    assert "50.0%" not in repr(percent_table(df))  # a Styler's text is only its name
    assert list(shown.columns) == ["view", "recall@k", "pass@k", "tokens"]
    assert shown.iloc[0].tolist() == ["top 5", "50.0%", "100.0%", "912"]
    assert shown.iloc[1].tolist() == ["256 tokens", "–", "25.0%", "1,256"]
    assert "50.0%" in text and "1,256" in text and "pass@k" in text
    assert df.recall.iloc[0] == 0.5  # the values are unchanged

def test_warnings_fold_into_one_line_per_kind_and_at_most_three_lines():
    out = io.StringIO()
    with summarize_warnings(stream=out) as caught:
        for i in range(50):
            warnings.warn(f"chunk {i} truncated", UserWarning)
        warnings.warn("a library's old API", DeprecationWarning)  # raised outside ragkit
        warnings.warn_explicit("ragkit's own notice", FutureWarning,
                               str(Path(ragkit.__file__).parent / "embed" / "encoders.py"), 1)
    assert len(caught) == 52  # every warning is caught; a third party's deprecation not shown
    lines = out.getvalue().splitlines()
    assert lines == ["50 × UserWarning: chunk 0 truncated",
                     "1 × FutureWarning: ragkit's own notice"]
    many = []
    with warnings.catch_warnings(record=True) as many:
        warnings.simplefilter("always")
        for cat in (UserWarning, DeprecationWarning, RuntimeWarning, FutureWarning, SyntaxWarning):
            warnings.warn("x", cat)
    lines = summary_lines(many)
    assert len(lines) == 3 and lines[-1] == "3 more warnings of 3 other kinds"


def test_quiet_cells_hooks_ipython_cells(capsys):
    class Events:
        def __init__(self):
            self.hooks = {}

        def register(self, name, fn):
            self.hooks[name] = fn

    class Shell:
        events = Events()

    shell = Shell()
    assert quiet_cells(shell)
    shell.events.hooks["pre_run_cell"]()
    for i in range(5):
        warnings.warn(f"w{i}", UserWarning)
    shell.events.hooks["post_run_cell"]()
    assert capsys.readouterr().err.splitlines() == ["5 × UserWarning: w0"]


def test_save_table_writes_every_row_where_the_notebook_says(tmp_path, monkeypatch):
    """Issue 50: a notebook shows a few rows and names the file that holds all of them."""
    from ragkit.report import markdown_table, save_table

    monkeypatch.setenv("RAGKIT_RESULTS_DIR", str(tmp_path))
    df = pd.DataFrame({"setting": [f"s{i}" for i in range(50)],
                       "diff": [i / 1000 for i in range(50)]})
    shown = save_table(df, "demo", {"diff": "{:+.1%}"}, title="every setting")
    path = tmp_path / "tables" / "demo.md"
    assert shown == str(path)  # outside the project: the path as it is
    text = path.read_text()
    assert text.startswith("# every setting\n\n| setting | diff |\n|---|---|\n")
    assert "| s49 | +4.9% |" in text and text.count("\n| s") == 51  # the header, then 50
    assert save_table("| a |\n|---|\n| 1 |", "md") == str(tmp_path / "tables" / "md.md")
    assert markdown_table(df.head(1)) == "| setting | diff |\n|---|---|\n| s0 | 0 |"


def test_summarize_warnings_leaves_out_only_the_pairs_named():
    import io
    import warnings

    from ragkit.report.prose import summarize_warnings

    out = io.StringIO()
    with summarize_warnings(stream=out, ignore=[(ResourceWarning, "unclosed file <x")]):
        warnings.warn("unclosed file <x name='/dev/null'>", ResourceWarning)
        warnings.warn("unclosed socket <y>", ResourceWarning)
        warnings.warn("unclosed file <x again>", UserWarning)
    text = out.getvalue()
    assert "unclosed socket" in text and "UserWarning: unclosed file <x again>" in text
    assert "/dev/null" not in text
