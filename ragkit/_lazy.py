"""Lazy package surfaces: a stage's ``__init__`` names what it exports and the module each name
lives in, and a module is imported only when one of its names is first asked for.

So ``import ragkit.retrieve.index`` does not load the rerankers, and ``from ragkit.evaluate import
paired`` does not load the benchmark loaders, while every public name is still one import away:

    >>> import ragkit.evaluate
    >>> ragkit.evaluate.paired.__module__
    'ragkit.evaluate.stats'
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module
from typing import Any


def surface(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any],
                                                            Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of `package`, whose public names are
    `exports` (name -> the submodule that defines it, relative to `package`)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
