"""Plain-text tables: how the measurement functions print their figures in a terminal.

>>> table = text_table(["run", "recall"], [["a", 81.25], ["bb", 7]])
>>> print(table)  # doctest: +NORMALIZE_WHITESPACE
run  recall
---  ------
a    81.2
bb   7
"""

from __future__ import annotations

from typing import Any, Sequence


def text_table(headers: Sequence[str], rows: Sequence[Sequence[Any]],
               float_format: str = ".1f") -> str:
    """Columns padded to their widest cell, a dashed rule under the headers; floats written
    with `float_format`, everything else with ``str``."""
    cols = [list(headers)] + [[format(v, float_format) if isinstance(v, float) else str(v)
                               for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in cols]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(df, formats: dict[str, str] | None = None) -> str:
    """A DataFrame as a Markdown table, every row; `formats` maps a column to a format spec
    (``"{:+.1%}"``); other floats are written with ``.3g``, everything else with ``str``.

    >>> import pandas as pd
    >>> print(markdown_table(pd.DataFrame({"a": ["x|y"], "d": [0.0123]}), {"d": "{:+.1%}"}))
    | a | d |
    |---|---|
    | x\\|y | +1.2% |
    """
    formats = formats or {}

    def cell(col: str, v: Any) -> str:
        text = (formats[col].format(v) if col in formats and v == v
                else format(v, ".3g") if isinstance(v, float) else str(v))
        return text.replace("|", "\\|").replace("\n", " ")

    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(c, v) for c, v in zip(cols, row)) + " |"
              for row in df.itertuples(index=False)]
    return "\n".join(lines)


def save_table(table, name: str, formats: dict[str, str] | None = None,
               title: str = "") -> str:
    """Write every row of `table` (a DataFrame, written with `markdown_table`, or a Markdown
    table already rendered) to ``<results>/tables/<name>.md`` under `title`, and return that
    path as a reader finds it (`shown_path`), for the line a notebook shows under the few
    rows it prints."""
    from ..cache import atomic_write_text
    from ..config import get_settings

    text = table if isinstance(table, str) else markdown_table(table, formats)
    path = get_settings().results_dir / "tables" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, (f"# {title}\n\n" if title else "") + text + "\n")
    return shown_path(path)


def save_page(parts: Sequence[str], name: str) -> str:
    """Write HTML `parts` (e.g. one staged case each) to ``<results>/tables/<name>.html``, one
    page with a rule between them, and return its path as a reader finds it (`shown_path`):
    what a notebook shows one of and links to for the rest."""
    from ..cache import atomic_write_text
    from ..config import get_settings

    path = get_settings().results_dir / "tables" / f"{name}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "<meta charset='utf-8'>\n" + "\n<hr>\n".join(parts) + "\n")
    return shown_path(path)


def shown_path(path) -> str:
    """`path` as a reader finds it: relative to the project root when inside it."""
    from pathlib import Path

    from ..config import PROJECT_ROOT

    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT.resolve()))
    except ValueError:
        return str(path)
