"""Source code read into a tree of units by a real parser, for the code chunker
(`ragkit.chunkers.code`).

- `language_of` / `detect_language`: a document's language, from its metadata, its file suffix,
  or by parsing it with each candidate grammar and keeping the one with the fewest syntax errors;
- `python_units` (the standard library's `ast`) and `tree_sitter_units` (a grammar of
  `tree-sitter-language-pack`): the file as a tree of `Unit` (definitions, their signatures and
  members, comments attached to what follows them), in character offsets (`ByteOffsets`);
- `line_pieces` / `blank_line_at`: the cut at lines, for a file that does not parse or a unit
  with no members.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePath
from typing import Callable, Sequence

from ..types import Document

# file suffix -> tree-sitter grammar name ("python" means the standard library's `ast`)
SUFFIX_LANGUAGES = {
    "py": "python", "pyi": "python", "rs": "rust", "c": "c", "h": "cpp", "cc": "cpp",
    "cpp": "cpp", "cxx": "cpp", "hpp": "cpp", "hh": "cpp", "hxx": "cpp", "java": "java",
    "go": "go", "js": "javascript", "mjs": "javascript", "cjs": "javascript",
    "jsx": "javascript", "ts": "typescript", "tsx": "tsx", "cs": "csharp", "rb": "ruby",
    "php": "php", "kt": "kotlin", "swift": "swift", "scala": "scala", "sh": "bash",
    "bash": "bash",
}
LANGUAGE_NAMES = {"py": "python", "rs": "rust", "js": "javascript", "ts": "typescript",
                  "c++": "cpp", "c#": "csharp", "c_sharp": "csharp", "golang": "go"}
# grammars tried when a document names no language, in order of preference on a tie (grammars
# that accept almost any text, such as PHP's, which reads text outside <?php as HTML, are left
# out: they would win every tie)
DETECT = ("python", "rust", "java", "go", "c", "cpp", "javascript", "typescript", "csharp")
MAX_ERROR_SHARE = 0.10  # tree-sitter recovers from errors; beyond this share, cut at lines

_IMPORT_TYPES = {"use_declaration", "extern_crate_declaration", "import_declaration",
                 "import_statement", "import_from_statement", "preproc_include",
                 "using_declaration", "using_directive", "package_declaration",
                 "namespace_use_declaration", "package_clause", "import_directive"}
_DEF_WORDS = ("function", "method", "class", "impl", "trait", "struct", "interface", "enum",
              "namespace", "mod_item", "module", "constructor", "object", "template", "linkage",
              "union", "record")


class ByteOffsets:
    """UTF-8 byte offset -> character offset, for tree-sitter's and `ast`'s byte positions.

    >>> b = ByteOffsets("aé日x")
    >>> [b.char(i) for i in (0, 1, 3, 6, 7)]
    [0, 1, 2, 3, 4]
    """

    def __init__(self, text: str):
        self.data = text.encode("utf-8", "surrogatepass")
        self._map: list[int] | None = None
        if len(self.data) != len(text):
            self._map = [0] * (len(self.data) + 1)
            pos = 0
            for i, ch in enumerate(text):
                n = len(ch.encode("utf-8", "surrogatepass"))
                for k in range(n):
                    self._map[pos + k] = i
                pos += n
            self._map[pos] = len(text)

    def char(self, byte: int) -> int:
        return byte if self._map is None else self._map[byte]


@dataclass
class Unit:
    """A node of the syntax tree, in character offsets: ``text[start:end]``.

    `head_end` is where its members begin (the signature is ``text[start:head_end]``); the
    members come from `expand` when the unit has to be opened."""

    start: int
    end: int
    kind: str
    name: str = ""
    head_end: int | None = None
    is_def: bool = False
    expand: Callable[[], list["Unit"]] | None = field(default=None, repr=False)

    @property
    def children(self) -> list["Unit"]:
        return self.expand() if self.expand else []


@lru_cache(maxsize=None)
def _parser(language: str):
    from tree_sitter_language_pack import get_parser

    return get_parser(language)


def _errors(tree) -> tuple[int, int]:
    """(error and missing nodes, bytes inside error nodes) of a tree-sitter tree."""
    n = size = 0
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            n += 1
            size += node.end_byte - node.start_byte
        elif node.has_error:
            stack.extend(node.children)
    return n, size


DETECT_SAMPLE = 65_536  # characters read to guess a language (Anthropic's longest file: 54,328)


def detect_language(text: str) -> tuple[str, int]:
    """The grammar of `DETECT` whose parse of `text` has the least text inside error nodes
    (then the fewest errors; then the first in `DETECT`), and its count of error nodes.

    Only the first `DETECT_SAMPLE` characters are read (up to the last line break in them):
    the nine trial parses of a multi-megabyte file would otherwise cost minutes, and its
    opening already says which language it is in. The whole file is then parsed once, by
    the grammar chosen.

    >>> detect_language("fn main() { let x = 1; }")
    ('rust', 0)
    """
    if len(text) > DETECT_SAMPLE:
        cut = text.rfind("\n", 0, DETECT_SAMPLE)
        text = text[:cut + 1 if cut > 0 else DETECT_SAMPLE]
    data = text.encode("utf-8", "surrogatepass")
    best, score = "", (1 << 60, 0)
    for lang in DETECT:
        n, size = _errors(_parser(lang).parse(data))
        if (size, n) < score:
            best, score = lang, (size, n)
            if n == 0:
                break
    return best, score[1]


def language_of(doc: Document) -> str:
    """The language a document declares (``metadata["language"]``) or its file suffix gives
    ('python', 'rust', 'cpp' ...), or '' when neither says."""
    lang = str(doc.metadata.get("language") or "").lower()
    if lang:
        return LANGUAGE_NAMES.get(lang, lang)
    if doc.path:
        return SUFFIX_LANGUAGES.get(PurePath(doc.path).suffix.lstrip(".").lower(), "")
    return ""


def _is_def(kind: str) -> bool:
    return any(w in kind for w in _DEF_WORDS) and "call" not in kind and "declarator" not in kind


def tree_sitter_units(text: str, language: str) -> tuple[Unit, int, int]:
    """The root `Unit` of `text` parsed by tree-sitter, with (error nodes, error characters)."""
    offsets = ByteOffsets(text)
    tree = _parser(language).parse(offsets.data)
    n_err, err_bytes = _errors(tree)
    data = offsets.data

    def name_of(node) -> str:
        for f in ("name", "declarator", "type"):
            c = node.child_by_field_name(f)
            if c is not None:
                name = data[c.start_byte:c.end_byte].decode("utf-8", "replace")
                return name.split("(")[0].strip()[:80]
        return ""

    def wrap(node) -> Unit:
        body = node.child_by_field_name("body")
        members = body if body is not None and body.named_child_count else node
        head = None
        if members is body:
            first = body.children[0] if body.children else None
            head_byte = first.end_byte if first is not None and not first.is_named \
                else body.start_byte
            head = offsets.char(head_byte)
        kids = [c for c in members.named_children if c.end_byte > c.start_byte]
        unit = Unit(offsets.char(node.start_byte), offsets.char(node.end_byte), node.type,
                    name_of(node), head, body is not None and _is_def(node.type))
        if kids:
            unit.expand = lambda: [wrap(c) for c in kids]
        return unit

    root = wrap(tree.root_node)
    root.start, root.end, root.head_end, root.is_def = 0, len(text), None, False
    return root, n_err, offsets.char(min(err_bytes, len(data)))


def python_units(text: str) -> Unit:
    """The root `Unit` of a Python module via `ast` (raises SyntaxError / ValueError)."""
    tree = ast.parse(text)
    offsets = ByteOffsets(text)
    line_bytes = [0, *(m.end() for m in re.finditer(rb"\r\n|\r|\n", offsets.data))]

    def at(line: int, col: int) -> int:
        return offsets.char(min(line_bytes[min(line, len(line_bytes)) - 1] + col,
                                len(offsets.data)))

    def wrap(node: ast.AST) -> Unit:
        start = at(node.lineno, node.col_offset)
        decorators = getattr(node, "decorator_list", [])
        if decorators:
            start = at(min(d.lineno for d in decorators), 0)
        line_start = at(node.lineno, 0) if not decorators else start
        if not text[line_start:start].strip():
            start = line_start
        end = at(node.end_lineno or node.lineno, node.end_col_offset or 0)
        kids: list[ast.stmt] = []
        for f in ("body", "handlers", "orelse", "finalbody", "cases"):
            kids += [k for k in getattr(node, f, []) or [] if hasattr(k, "lineno")]
        kids.sort(key=lambda k: (k.lineno, k.col_offset))
        is_def = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        head = at(kids[0].lineno, 0) if kids else None
        if head is not None and head <= start:  # one-line body: ``if x: return``
            head = None
        unit = Unit(start, max(end, start), type(node).__name__, getattr(node, "name", ""),
                    head, is_def)
        if kids and head is not None:
            unit.expand = lambda: [wrap(k) for k in kids]
        return unit

    body = list(tree.body)
    root = Unit(0, len(text), "Module")
    if body:
        root.expand = lambda: [wrap(k) for k in body]
    return root


def _attach(text: str, kids: Sequence[Unit]) -> list[list[Unit]]:
    """Group members: comments and attributes go with the member below them."""
    groups: list[list[Unit]] = []
    pending: list[Unit] = []
    for k in kids:
        pending.append(k)
        if "comment" in k.kind or k.kind in ("attribute_item", "inner_attribute_item",
                                             "decorator", "annotation"):
            continue
        groups.append(pending)
        pending = []
    if pending:
        if groups:
            groups[-1].extend(pending)
        else:
            groups.append(pending)
    return groups


def blank_line_at(text: str, pos: int) -> bool:
    """Does a blank line separate the code before `pos` from the code after it (the
    whitespace around `pos` holds two line breaks)?

    >>> blank_line_at("a()\\n\\nb()", 4), blank_line_at("a()\\nb()", 4)
    (True, False)
    """
    lo, hi = pos, pos
    while lo > 0 and text[lo - 1] in " \t\r\n":
        lo -= 1
    while hi < len(text) and text[hi] in " \t\r\n":
        hi += 1
    return text.count("\n", lo, hi) >= 2


def line_pieces(text: str, lo: int, hi: int, size: int) -> list[tuple[int, int]]:
    """Cut ``text[lo:hi]`` into spans of at most `size` characters (not counting the newline
    that ends one) at line ends, at a blank line when one falls in the second half of a span;
    a line longer than `size` is cut.

    >>> line_pieces("aa\\nbb\\n\\ncc\\ndd", 0, 13, 8)
    [(0, 6), (6, 13)]
    """
    out, start = [], lo
    while hi - start > size:
        window = text[start:start + size + 1]
        cut = window.rfind("\n\n")
        if cut < size // 2:
            cut = window.rfind("\n")
        end = start + cut + 1 if cut > 0 else start + size
        out.append((start, end))
        start = end
    if hi > start:
        out.append((start, hi))
    return out


def _group_unit(group: Sequence[Unit]) -> Unit:
    """Comments/attributes and the member they belong to, as one unit that opens to its
    parts (so a too-long group is cut between them)."""
    return Unit(group[0].start, group[-1].end, "group", group[-1].name, None, False,
                lambda: list(group))
