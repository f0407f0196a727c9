"""``ragkit docs``: the module list handed to pdoc reaches every public module once."""

import pkgutil
import warnings

import pytest

import ragkit
from ragkit.tools.docs import modules


def test_pdoc_reaches_every_public_module_once():
    extract = pytest.importorskip("pdoc.extract")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reached = extract.walk_specs(modules())
    assert not [str(w.message) for w in caught]
    public = {"ragkit"} | {m.name for m in pkgutil.walk_packages(ragkit.__path__, "ragkit.")
                           if not any(p.startswith("_") for p in m.name.split("."))}
    assert set(reached) == public
    assert len(reached) == len(set(reached))
