"""The package's layers, read from the source with `ast` (every import counts, those inside
functions too):

- the library never imports the tools: every module of ragkit/ outside ragkit/tools/ is read and
  any import of `ragkit.tools` (absolute, or relative from wherever it sits) fails.
  `ragkit/__main__.py` is the one exception: it is the `ragkit` command's door
  (`python -m ragkit`), not library code, and nothing imports it;
- the stages keep the pipeline's order (`RULES`): `text` <- `chunkers` <- `contextualize`;
  `embed` and `retrieve` never import `experiments` or `report`; `evaluate` never imports
  `embed`, `retrieve` or `chunkers`; `scale` never imports `report`; the shared modules at the
  top of the package (`types`, `config`, `models`, `cache`, ...) import no stage; within a
  stage, `MODULE_RULES` (the shards never import the stages that fill them);
- no cycle: the graph of the subpackages (each shared module counted as one "core" node) has
  none, and neither has the graph of the modules (`KNOWN_MODULE_CYCLES` is empty: it may only
  shrink);
- every name a subpackage's ``__init__`` exports is there, in the module it names.
"""

import ast
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ragkit"
TOOLS = PACKAGE / "tools"
DOORS = {PACKAGE / "__main__.py"}
STAGES = ("text", "chunkers", "contextualize", "embed", "retrieve", "evaluate", "experiments",
          "report", "scale", "tools")
CORE = "core"  # the shared modules at the top of the package: types, config, models, cache ...

# stage -> the stages it must never import (a rule of the pipeline's order)
RULES = {
    CORE: set(STAGES),
    "text": set(STAGES) - {"text"},
    "chunkers": {"contextualize", "experiments", "report", "scale", "tools"},
    "contextualize": {"experiments", "report", "scale", "tools"},
    "embed": {"chunkers", "contextualize", "retrieve", "experiments", "report", "scale", "tools"},
    "retrieve": {"experiments", "report", "scale", "tools"},
    "evaluate": {"embed", "retrieve", "chunkers", "contextualize", "experiments", "report",
                 "scale", "tools"},
    "experiments": {"scale", "tools"},
    "report": {"experiments", "scale", "tools"},
    "scale": {"report", "experiments", "tools"},
}
# Within a stage: module -> modules it must never import. The shards store and read batches
# (`ragkit.scale.batches`); the stages that fill them (chunkers, encoders) are handed in.
MODULE_RULES = {"ragkit.scale.shards": {"ragkit.scale.stages"},
                "ragkit.scale.index": {"ragkit.scale.stages"}}
# Module-level cycles left, each with its reason (the list may only shrink):
KNOWN_MODULE_CYCLES: list[set[str]] = []


def library_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if TOOLS not in p.parents and p not in DOORS)


def all_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p not in DOORS)


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


def stage_of(name: str) -> str | None:
    """The stage a dotted name belongs to (``ragkit.retrieve.rerank`` -> ``retrieve``), `CORE`
    for the package itself and its shared modules, None outside ragkit."""
    parts = name.split(".")
    if parts[0] != "ragkit":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in STAGES else CORE


def module_imports(paths) -> dict[str, set[str]]:
    """module -> the ragkit modules it imports (a name imported from a module counts as that
    module; a submodule imported by name counts as the submodule)."""
    names = {module_name(p): p for p in paths}
    graph = {}
    for name, path in names.items():
        deps = set()
        for _, dotted in imported(path):
            while dotted and dotted not in names:
                dotted = dotted.rpartition(".")[0]
            if dotted and dotted != name:
                deps.add(dotted)
        graph[name] = deps
    return graph


def stage_imports(paths) -> dict[tuple[str, str], list[str]]:
    """(stage, imported stage) -> the ``module -> module`` edges that make it."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module, deps in module_imports(paths).items():
        for dep in deps:
            a, b = stage_of(module), stage_of(dep)
            if a != b:
                edges.setdefault((a, b), []).append(f"{module} -> {dep}")
    return edges


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_walk_sees_the_whole_library():
    names = {module_name(p) for p in library_modules()}
    assert {"ragkit", "ragkit.report.claims", "ragkit.retrieve", "ragkit.chunkers.structure",
            "ragkit.experiments.reproductions"} <= names
    assert not any(is_tools(n) for n in names)


def test_the_package_shows_the_stages():
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert subpackages == set(STAGES)


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


@pytest.mark.parametrize("stage", sorted(RULES))
def test_each_stage_keeps_its_place_in_the_pipeline(stage):
    edges = stage_imports(all_modules())
    bad = [e for (a, b), found in sorted(edges.items()) if a == stage and b in RULES[stage]
           for e in found]
    assert not bad, f"{stage} imports what it must not: {bad}"


@pytest.mark.parametrize("module", sorted(MODULE_RULES))
def test_modules_within_a_stage_keep_apart(module):
    graph = module_imports(all_modules())
    assert module in graph
    assert not graph[module] & MODULE_RULES[module], sorted(graph[module] & MODULE_RULES[module])


def test_the_rules_hold_the_issues_order():
    """The rules the issue names are all in `RULES`."""
    assert {"chunkers", "contextualize"} <= RULES["text"]
    assert "contextualize" in RULES["chunkers"]
    assert {"experiments", "report"} <= RULES["embed"] & RULES["retrieve"]
    assert {"embed", "retrieve", "chunkers"} <= RULES["evaluate"]
    assert "report" in RULES["scale"]


def test_the_stages_import_each_other_without_a_cycle():
    edges = stage_imports(all_modules())
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    found = cycles(graph)
    assert not found, [(sorted(c), [e for (a, b), es in edges.items()
                                     if a in c and b in c for e in es]) for c in found]


def test_the_modules_import_each_other_without_a_cycle():
    found = [c for c in cycles(module_imports(all_modules())) if c not in KNOWN_MODULE_CYCLES]
    assert not found, [sorted(c) for c in found]


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("stage", STAGES[:-1])
def test_every_name_a_stage_exports_is_there(stage):
    package = importlib.import_module(f"ragkit.{stage}")
    missing = [name for name in package.__all__ if not hasattr(package, name)]
    assert not missing, missing
    for module, names in getattr(package, "_EXPORTS", {}).items():  # the lazy surfaces
        home = importlib.import_module(f"ragkit.{stage}.{module}")
        for name in names:
            assert getattr(home, name) is getattr(package, name), name


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


def test_a_public_name_spelt_like_its_submodule_stays_the_name_after_the_import():
    """``from ragkit.report import first_holding_rank, outranked``: the first name loads the
    submodule ``report/outranked.py``; the name ``outranked`` is still the function."""
    import subprocess
    import sys

    code = ("from ragkit.report import first_holding_rank, outranked; "
            "import inspect; print(inspect.isfunction(outranked))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
