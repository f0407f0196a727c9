"""The library never imports the tools: every module of ragkit/ outside ragkit/tools/ is read
with `ast` and any import of `ragkit.tools` (absolute, or relative from wherever it sits) fails.

`ragkit/__main__.py` is the one exception: it is the `ragkit` command's door
(`python -m ragkit`), not library code, and nothing imports it.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ragkit"
TOOLS = PACKAGE / "tools"
DOORS = {PACKAGE / "__main__.py"}


def library_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if TOOLS not in p.parents and p not in DOORS)


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, root: Path = PACKAGE) -> list[tuple[int, str]]:
    """(line, absolute dotted name) of everything the module imports, relative imports
    resolved against its package (``from .. import tools`` gives ``ragkit.tools``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package[: len(package) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def is_tools(name: str) -> bool:
    return name == "ragkit.tools" or name.startswith("ragkit.tools.")


def test_the_walk_sees_the_whole_library():
    names = {module_name(p) for p in library_modules()}
    assert {"ragkit", "ragkit.report.claims", "ragkit.retrieve", "ragkit.chunkers.structure",
            "ragkit.experiments.reproductions"} <= names
    assert not any(is_tools(n) for n in names)


@pytest.mark.parametrize("source, found", [
    ("import ragkit.tools.bench\n", True),
    ("from ragkit.tools import cli\n", True),
    ("from ragkit import tools\n", True),
    ("from .tools.cli import main\n", True),
    ("from . import tools\n", True),
    ("from .chunkers import REGISTRY\n", False),
    ("import ragkit.toolsmith\n", False),
])
def test_the_check_catches_absolute_and_relative_forms(tmp_path, source, found):
    fake = tmp_path / "ragkit"
    (fake / "sub").mkdir(parents=True)
    (fake / "mod.py").write_text(source)
    (fake / "sub" / "deep.py").write_text(source.replace("from .", "from .."))
    for path in (fake / "mod.py", fake / "sub" / "deep.py"):
        assert any(is_tools(n) for _, n in imported(path, fake)) is found, path


@pytest.mark.parametrize("path", library_modules(), ids=module_name)
def test_library_module_does_not_import_the_tools(path):
    bad = [f"line {line}: {name}" for line, name in imported(path) if is_tools(name)]
    assert not bad, f"{path.relative_to(PACKAGE.parent)} imports the tools: {bad}"


def test_the_door_is_the_only_exception():
    door = PACKAGE / "__main__.py"
    assert any(is_tools(n) for _, n in imported(door))


HEAVY = ("torch", "faiss", "transformers", "sentence_transformers", "onnxruntime", "llama_cpp",
         "ragas", "chonkie", "langchain_text_splitters")


def test_importing_every_module_is_cheap():
    """`--doctest-modules` imports every module of ragkit, tools included: none may fail, and
    none may load a model library or do heavy work at import (they load on first use)."""
    import subprocess
    import sys

    code = (
        "import importlib, pkgutil, sys, ragkit\n"
        "for m in pkgutil.walk_packages(ragkit.__path__, 'ragkit.'):\n"
        "    if m.name != 'ragkit.__main__':\n"
        "        importlib.import_module(m.name)\n"
        f"print(sorted(h for h in {HEAVY!r} if h in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=PACKAGE.parent, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", f"loaded at import: {out.stdout.strip()}"
