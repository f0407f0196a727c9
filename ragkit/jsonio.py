"""Read JSON a reader supplied (golden files, results files, caches) without a traceback.

Python's `json` raises a `RecursionError` on JSON nested a few thousand levels deep, and a
`ValueError` on an integer of more than 4,300 digits (the int-conversion limit). `loads` turns
both into a `JsonLimitError` — a `json.JSONDecodeError`, so callers that already report bad
JSON with its line report these too — and checks the nesting before parsing, with a cheap
scan of the brackets outside strings, so the parser never recurses that deep.

    >>> loads('{"a": [1, 2]}')
    {'a': [1, 2]}
    >>> loads("[" * 200 + "]" * 200)
    Traceback (most recent call last):
    ...
    ragkit.jsonio.JsonLimitError: JSON nested deeper than 100 levels: line 1 column 101 (char 100)
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 100  # levels of [ ] and { }; ragkit's own files use fewer than 10
MAX_DIGITS = 4300  # Python's default int-conversion limit (sys.get_int_max_str_digits)

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(r"[\[\]{}]")
_LONG_INT = re.compile(r"-?\d{%d,}" % (MAX_DIGITS + 1))


class JsonLimitError(json.JSONDecodeError):
    """JSON that is valid but beyond what ragkit reads: nested too deep, or an integer with
    too many digits; `lineno` and `colno` say where, as for any `json.JSONDecodeError`."""


def _depth_error(text: str) -> JsonLimitError | None:
    """The place where `text` first nests deeper than `MAX_DEPTH`, outside strings."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:  # an upper bound on the depth
        return None
    depth = 0
    blanked = _STRING.sub(lambda m: " " * len(m.group()), text)  # same offsets, no strings
    for m in _BRACKET.finditer(blanked):
        depth += 1 if m.group() in "[{" else -1
        if depth > MAX_DEPTH:
            return JsonLimitError(f"JSON nested deeper than {MAX_DEPTH} levels", text,
                                  m.start())
    return None


def loads(text: str) -> Any:
    """`json.loads`, raising `JsonLimitError` (a `json.JSONDecodeError`) for JSON nested
    deeper than `MAX_DEPTH` or holding an integer of more than `MAX_DIGITS` digits."""
    err = _depth_error(text)
    if err is not None:
        raise err
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError):
        m = _LONG_INT.search(_STRING.sub(lambda m: " " * len(m.group()), text))
        raise JsonLimitError(f"a number of more than {MAX_DIGITS} digits", text,
                             m.start() if m else 0) from None
