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


def surface(package: str, exports: dict[str, tuple[str, ...]]
            ) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__all__``, module-level ``__getattr__`` and ``__dir__`` of `package`, whose public
    names are `exports` (a submodule, relative to `package` -> the names it defines there).

    A name given by two submodules is an error, not a silent pick of one:

    >>> surface("p", {"a": ("x",), "b": ("x", "y")})
    Traceback (most recent call last):
    ...
    ValueError: p exports 'x' from both .a and .b
    """
    home: dict[str, str] = {}
    for module, names in exports.items():
        for name in names:
            if name in home:
                raise ValueError(f"{package} exports {name!r} from both .{home[name]} and "
                                 f".{module}")
            home[name] = module

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        # importing a submodule binds its name on the package; where a public name is spelt
        # like that submodule (``report.outranked``, the function, in ``report/outranked.py``)
        # the name, not the module, is what the package gives
        if module in home:
            setattr(sys.modules[package], module,
                    getattr(import_module(f"{package}.{home[module]}"), module))
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(home))

    return list(home), __getattr__, __dir__
