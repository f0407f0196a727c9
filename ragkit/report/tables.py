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
