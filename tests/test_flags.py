"""``flags`` is one kind of member everywhere (issue 33): a read-only property holding the list
of strings a results row must carry, on chunkers, encoders, scorers and retrievers alike, never
a method to call. Records that carry flags (a preamble, an experiment's outcome) hold them as a
field."""

import importlib
import inspect
import pkgutil

import ragkit


def _classes():
    for info in pkgutil.walk_packages(ragkit.__path__, "ragkit."):
        if info.name == "ragkit.__main__":
            continue
        module = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == info.name:
                yield f"{info.name}.{name}", cls


def test_no_class_has_a_flags_method():
    methods = [name for name, cls in _classes()
               if inspect.isfunction(cls.__dict__.get("flags"))]
    assert not methods, f"flags must be a property, not a method: {methods}"


def test_the_chunkers_and_encoders_have_a_flags_property():
    from ragkit.chunkers import Chunker, FixedCharChunker, StructureChunker
    from ragkit.embed import Embedder
    from ragkit.embed.late import LateEmbedder

    for cls in (Chunker, StructureChunker, Embedder, LateEmbedder):
        declared = inspect.getattr_static(cls, "flags")
        assert isinstance(declared, property) and declared.fset is None, cls.__name__
    assert FixedCharChunker(100, 0).flags == []
