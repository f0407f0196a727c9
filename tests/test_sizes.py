"""Nothing in the library grows too big to read: no module of ragkit/ (the tools aside) over
`MAX_MODULE_LINES` lines, and no function or method over `MAX_FUNCTION_LINES` lines (counted
from its first decorator to its last line, docstring included), read with `ast`.

`ALLOWED` names the units over a limit today, each with its size when it was listed: the list
may only shrink. A listed unit may not grow past its size, and one that has come under the limit
must leave the list (the test says so).
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ragkit"
TOOLS = PACKAGE / "tools"
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80

# unit (module path, or "module path:Qualified.name") -> its size in lines when listed
ALLOWED: dict[str, int] = {}


def library_modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if TOOLS not in p.parents)


def functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, lines) of every function and method, nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield prefix + node.name, node.end_lineno - start + 1
            yield from functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")


def sizes() -> dict[str, tuple[int, int]]:
    """unit -> (lines, limit) for every module and function of the library."""
    out = {}
    for path in library_modules():
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text(encoding="utf-8")
        out[rel] = (len(text.splitlines()), MAX_MODULE_LINES)
        for name, n in functions(ast.parse(text, filename=str(path))):
            out[f"{rel}:{name}"] = (n, MAX_FUNCTION_LINES)
    return out


def test_no_module_or_function_is_over_its_limit():
    over = {unit: n for unit, (n, limit) in sizes().items()
            if n > limit and n > ALLOWED.get(unit, 0)}
    assert not over, f"over the limit (split them; ALLOWED may only shrink): {over}"


def test_the_allowed_list_only_shrinks():
    found = sizes()
    gone = [unit for unit in ALLOWED if unit not in found]
    assert not gone, f"listed but not in the library any more (remove them): {gone}"
    under = [unit for unit, n in ALLOWED.items() if found[unit][0] <= found[unit][1]]
    assert not under, f"under the limit now (remove them from ALLOWED): {under}"


@pytest.mark.parametrize("source, name, lines", [
    ("def f():\n    pass\n", "f", 2),
    ("class A:\n    @property\n    def g(self):\n        return 1\n", "A.g", 3),
    ("def f():\n    def inner():\n        pass\n    return inner\n", "f.inner", 2),
])
def test_the_count_reads_functions_methods_and_decorators(source, name, lines):
    assert dict(functions(ast.parse(source)))[name] == lines


@pytest.mark.parametrize("module", library_modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_defines_a_name_twice(module):
    """A second `def` of the same name silently replaces the first (a shadowed copy is dead
    code a reader may still trust): top-level functions and classes, and each class's methods
    (property setters aside), are defined once."""
    tree = ast.parse(module.read_text())
    scopes = [tree] + [n for n in tree.body if isinstance(n, ast.ClassDef)]
    for scope in scopes:
        seen: set[str] = set()
        for node in scope.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if any(getattr(d, "attr", "") in ("setter", "deleter", "register")
                   or getattr(d, "id", "") == "overload" for d in node.decorator_list):
                continue
            assert node.name not in seen, f"{module.name}: {node.name} is defined twice"
            seen.add(node.name)
