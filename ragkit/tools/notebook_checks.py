"""Checks a course notebook must pass, on its source and on its executed copy.

Source (``notebooks/NN_*.py``, jupytext percent format): **no number typed in Markdown prose.**
A number the reader sees in prose either comes from a cell of the same run (the cell renders
the sentence with ``display(Markdown(f"..."))``) or is one of these, which the check allows:

- inside a code span: a setting or an identifier, written as code (`k = 5`,
  `FixedCharChunker(1000, 200)`);
- a heading's section number (``## 2 · ...``) or a list marker (``1. ...``);
- a reference to a seed, a notebook or a section (``seed 002``, ``notebooks 02–06``);
- a year (the corpus is dated; papers have years);
- the confidence level of an interval (``95 % interval``);
- a published reference value, in a sentence that names its source: the sentence contains
  ``seed NNN``, ``published``, ``reports`` or ``(source: ...)``.

Executed copy (``notebooks/NN_*.ipynb``): a closing "What we measured" section rendered by a
cell, every figure shown inline as an image output, and no cell output with more than three
warning lines.

``python -m ragkit.tools.notebook_checks`` prints every problem with its file and line.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Iterator

NUMBER = re.compile(r"(?<![\w.\-/@])\d[\d,]*(?:\.\d+)?(?![\w\-/]|\.\d)")
_CODE = re.compile(r"`[^`]*`")
_HEADING = re.compile(r"^#{1,6}\s+(?:\d+(?:\.\d+)*\s*·)?")
_LIST = re.compile(r"^\s*\d+\.\s")
_REFERENCE = re.compile(r"\b(?:seed|notebook|section|issue)s?\s+\d+(?:\s*[–-]\s*\d+)?", re.I)
_YEAR = re.compile(r"(?<![\d,.])(?:19|20)\d\d(?![\d,.]\d)")
_LEVEL = re.compile(r"\b95\s*%\s+(?:\w+\s+){0,2}(?:interval|CI|confidence)", re.I)
_SOURCED = re.compile(r"\bseed\s+\d{3}\b|\bpublished\b|\breports\b|\(source:", re.I)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[A-Z\"“(])")
WARNING_LINE = re.compile(r"\b\w*Warning\b|^\s*warnings\.warn\(", re.M)
MAX_WARNING_LINES = 3


def markdown_lines(source: str) -> Iterator[tuple[int, str]]:
    """(line number, text without the leading ``# ``) of every Markdown line of a
    jupytext percent-format notebook."""
    in_markdown = False
    for number, line in enumerate(source.splitlines(), 1):
        if line.startswith("# %%"):
            in_markdown = "[markdown]" in line
        elif in_markdown and line.startswith("#"):
            yield number, line[2:] if line.startswith("# ") else line[1:]


def _paragraphs(source: str) -> Iterator[list[tuple[int, str]]]:
    """Markdown prose in paragraphs (a blank line or a heading ends one), code spans blanked,
    heading numbers and list markers removed; each line with its line number."""
    paragraph: list[tuple[int, str]] = []
    for number, line in markdown_lines(source):
        heading = line.lstrip().startswith("#")
        if (not line.strip() or heading) and paragraph:
            yield paragraph
            paragraph = []
        line = _CODE.sub(lambda m: " " * len(m.group()), line)
        line = _HEADING.sub("", line) if heading else _LIST.sub("", line)
        if line.strip():
            paragraph.append((number, line))
        if heading and paragraph:
            yield paragraph
            paragraph = []
    if paragraph:
        yield paragraph


def _blank(pattern: re.Pattern, text: str) -> str:
    return pattern.sub(lambda m: " " * len(m.group()), text)


def typed_numbers(source: str) -> list[tuple[int, str]]:
    """(line, number) of every number typed in the Markdown prose of a notebook source that
    the rules in the module docstring do not allow.

    >>> typed_numbers("# %% [markdown]\\n# ## 2 · Recall is 78.3 % at `k = 5`.\\n"
    ...               "# Seed 002 claims 0.81 in 2024, in a 95 % interval.")
    [(2, '78.3')]
    """
    found = []
    for lines in _paragraphs(source):
        text, starts = "", []
        for number, line in lines:
            starts.append((len(text), number))
            text += line + " "
        pos = 0
        for sentence in _SENTENCE.split(text):
            at = text.index(sentence, pos)
            pos = at + len(sentence)
            if _SOURCED.search(sentence):
                continue
            clean = _blank(_LEVEL, _blank(_YEAR, _blank(_REFERENCE, sentence)))
            for m in NUMBER.finditer(clean):
                line = max(n for offset, n in starts if offset <= at + m.start())
                found.append((line, m.group()))
    return found


def output_problems(executed: dict) -> list[str]:
    """What an executed notebook (nbformat JSON) lacks: a closing "What we measured" section
    rendered by a cell, inline images where figures are saved, and quiet cells (no output
    with more than three warning lines)."""
    problems: list[str] = []
    cells = [c for c in executed.get("cells", []) if c.get("cell_type") == "code"]
    rendered, images = [], 0
    for index, cell in enumerate(cells):
        warning_lines = 0
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            images += "image/png" in data or "image/svg+xml" in data
            rendered.append("".join(data.get("text/markdown", "")))
            text = "".join(out.get("text", "")) + "".join(data.get("text/plain", ""))
            if out.get("name") == "stderr" or out.get("output_type") == "stream":
                warning_lines += len(WARNING_LINE.findall(text))
        if warning_lines > MAX_WARNING_LINES:
            problems.append(f"code cell {index + 1}: {warning_lines} warning lines in its output "
                            f"(at most {MAX_WARNING_LINES})")
    if not any("What we measured" in md for md in rendered):
        problems.append("no closing 'What we measured' section rendered by a cell")
    source = "".join("".join(c.get("source", "")) for c in cells)
    if ("save_figure" in source or "show_figure" in source) and not images:
        problems.append("figures are saved but none is shown inline (no image output)")
    return problems


def main(argv: list[str] | None = None) -> int:
    from ..config import PROJECT_ROOT

    folder = Path(argv[0]) if argv else PROJECT_ROOT / "notebooks"
    bad = 0
    for path in sorted(folder.glob("[0-9][0-9]_*.py")):
        for line, number in typed_numbers(path.read_text(encoding="utf-8")):
            print(f"{path.name}:{line}: typed number {number!r} in Markdown prose")
            bad += 1
        executed = path.with_suffix(".ipynb")
        if executed.exists():
            for problem in output_problems(json.loads(executed.read_text(encoding="utf-8"))):
                print(f"{executed.name}: {problem}")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
