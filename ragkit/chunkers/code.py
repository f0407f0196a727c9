"""Source code chunked along the language's own units, found by a real parser.

`CodeChunker` reads a file's syntax tree (Python through the standard library's `ast`, every
other language through a tree-sitter grammar of `tree-sitter-language-pack`) and cuts where the
language has its joints:

- a whole definition (function, class, method, ``impl`` block, namespace ...) is one chunk when
  it fits `size` characters; small neighbours (imports, constants, short functions, a class's
  fields and small methods) are packed together up to `size`;
- a definition too big for one chunk is opened: its signature (the text before its body, e.g.
  ``impl<S> Observer<S> for OomObserver``, ``class Big(Base):``, ``def run(self, x):``) goes into
  the *prefix* of every chunk cut from its body, and its members or statements are packed the
  same way, recursively (a long function is cut between statements, with its signature
  repeated; a long ``match`` inside it is cut between its arms);
- comments, doc comments and attributes (``#[derive]``, ``@decorator``) stay with the code below
  them; the file's imports are added to the prefix of the chunks that do not hold them
  (`import_chars` characters of them at most; how many import lines were left out is recorded).

The prefix is kept apart from the body (`Chunk.prefix`), so every chunk is still exactly
``source[start:end]``. Offsets come from the parser: tree-sitter reports UTF-8 byte offsets and
`ast` byte columns, both converted to character offsets (`ByteOffsets`), never searched for.

The language is the document's ``metadata["language"]``, else its file suffix, else detected by
parsing the text with each candidate grammar and keeping the one with the fewest syntax errors
(`detect_language`; Anthropic's set has no file names). A file that does not parse (a Python
``SyntaxError``; a tree-sitter tree whose error nodes cover more than `MAX_ERROR_SHARE` of the
file; no grammar recognised) is cut at lines instead: a `CodeParseWarning` names the document,
every chunk carries ``metadata["parsed_by"] == "lines"`` and ``metadata["fallback"]`` (the
reason), and `flags` reports the count for the results row.

    >>> doc = Document("d", "import os\\n\\nclass A:\\n    def f(self):\\n        return 1\\n",
    ...                path="a.py")
    >>> [(c.text[:9], c.metadata["parsed_by"]) for c in CodeChunker(size=400).chunk(doc)]
    [('import os', 'ast')]
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePath
from typing import Any, Callable, Sequence

from ..types import Chunk, Document, trim_span
from .base import Chunker

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
_SPACE = re.compile(r"\s+")
Fits = Callable[[int, int, tuple], bool]


class CodeParseWarning(UserWarning):
    """A source file could not be parsed and was cut at lines instead."""


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


@dataclass
class Piece:
    """A chunk to be: a span, the signatures of the definitions around it, and its notes."""

    start: int
    end: int
    scope: tuple[str, ...]
    meta: dict[str, Any] = field(default_factory=dict)


# ----------------------------------------------------------------------------- parsers


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


# ----------------------------------------------------------------------------- chunker


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


class CodeChunker(Chunker):
    """Code chunks along functions, classes and methods (see the module doc).

    `size`: the most body characters in a chunk; `pack`: pack small neighbouring units up to
    `size` (else each unit alone); `import_chars`: the most characters of the file's import
    lines added to the prefix (0: none); `max_tokens`: if set, also the most `tokenizer`
    tokens of a chunk's prefix and body together (e.g. the encoder's window: the router sets
    it to its hard cap); `overlap`: each chunk also starts with the whole lines of the code
    before it that fit in `overlap` characters (as fixed windows overlap, so that a span cut
    by a chunk boundary is still whole in one chunk; default a fifth of `size`); `language`
    overrides the document's own.

    The defaults (2,000 characters, overlap 400, packing on, no import lines in the prefix)
    were chosen on the tune half of Anthropic's questions with ragkit's retrieval stack
    (``ragkit bench code``: sizes 1,000 / 1,500 / 2,000, each without overlap and with a
    fifth; the mean of Pass@B and recall@B over budgets of 512 / 1,024 / 2,048 tokens rose
    with both); an earlier tuning found that import lines in the prefix cost budget tokens
    and lowered both metrics. Such a chunk is longer than MiniLM's window: search it with
    ``DenseRetriever(long="windows")`` (the stack does), or set `max_tokens`."""

    name = "code"

    def __init__(self, size: int = 2000, pack: bool = True, import_chars: int = 0,
                 max_tokens: int | None = None, tokenizer: str = "minilm",
                 overlap: int | None = None, language: str | None = None):
        if size < 1 or import_chars < 0 or (max_tokens is not None and max_tokens < 1):
            raise ValueError(f"need size >= 1, import_chars >= 0 and max_tokens >= 1, got "
                             f"{size}, {import_chars}, {max_tokens}")
        self.size, self.pack, self.import_chars = size, pack, import_chars
        self.max_tokens, self.tokenizer = max_tokens, tokenizer
        overlap = size // 5 if overlap is None else overlap
        if not 0 <= overlap < size:
            raise ValueError(f"need 0 <= overlap < size, got {overlap}")
        self.overlap = overlap
        self.language = language
        self._fallbacks: list[str] = []
        self._tolerated: list[str] = []

    @property
    def label(self) -> str:
        cap = f",{self.max_tokens} {self.tokenizer}" if self.max_tokens else ""
        over = f"/{self.overlap}" if self.overlap else ""
        return (f"code({self.size}{over}{cap}{'' if self.pack else ',unpacked'},"
                f"imports {self.import_chars})")

    def flags(self) -> list[str]:
        """For the results row: documents cut at lines, and parsed despite a few errors."""
        out = []
        if self._fallbacks:
            out.append(f"code_line_fallback:{len(self._fallbacks)}")
        if self._tolerated:
            out.append(f"code_parse_errors_tolerated:{len(self._tolerated)}")
        return out

    def chunk_all(self, docs, progress: bool = False) -> list[Chunk]:
        self._fallbacks, self._tolerated = [], []
        return super().chunk_all(docs, progress)

    # -- parsing

    def parse(self, doc: Document) -> tuple[Unit | None, str, dict[str, Any]]:
        """(root unit or None, language, notes) for a document; None means: cut at lines."""
        text = doc.text
        lang = self.language or language_of(doc)
        notes: dict[str, Any] = {}
        if not text.strip():
            return Unit(0, len(text), "empty"), lang, notes
        if not lang:
            lang, _ = detect_language(text)
            notes["language_detected"] = True
        if lang == "python":
            try:
                return python_units(text), lang, {**notes, "parsed_by": "ast"}
            except (SyntaxError, ValueError) as e:
                line = getattr(e, "lineno", None)
                return None, lang, {**notes, "fallback": f"python SyntaxError at line {line}: "
                                                         f"{getattr(e, 'msg', e)}"}
        try:
            root, n_err, err_chars = tree_sitter_units(text, lang)
        except LookupError as e:  # no grammar of that name
            return None, lang, {**notes, "fallback": f"no grammar for {lang!r}: {e}"}
        if err_chars > MAX_ERROR_SHARE * len(text):
            return None, lang, {**notes, "fallback": f"{lang} parse errors cover {err_chars} of "
                                                     f"{len(text)} characters"}
        notes["parsed_by"] = "tree-sitter"
        if n_err:
            notes["parse_errors"] = n_err
        return root, lang, notes

    # -- cutting

    def pieces(self, text: str, unit: Unit, scope: tuple[str, ...], lo: int, hi: int,
               fits: Fits) -> list[Piece]:
        """Pieces of ``text[lo:hi]`` (the span of `unit`, with the gap before it)."""
        items = self.items(text, unit, scope, lo, hi)
        return self.lines(text, lo, hi, scope, fits) if items is None \
            else self._pack(text, items, fits)

    def items(self, text: str, unit: Unit, scope: tuple[str, ...], lo: int, hi: int
              ) -> list[tuple[int, int, Unit | None, tuple[str, ...]]] | None:
        """The parts of ``text[lo:hi]`` (the span of `unit`, with the gap before it) to pack:
        its signature (with whatever precedes its members) under `scope`, then each member
        with its comments and attributes under `scope` + the signature; None for a unit
        without members (it can only be cut at lines)."""
        kids = unit.children
        if not kids:
            return None
        inner = scope
        if unit.is_def:
            sig_end = unit.head_end if unit.head_end is not None else kids[0].start
            sig = _SPACE.sub(" ", text[unit.start:sig_end]).strip().rstrip("{").strip()
            if sig:
                inner = (*scope, sig[:200])
        groups = [[k] for k in kids] if unit.kind == "group" else _attach(text, kids)
        first = min(max(groups[0][0].start, lo), max(unit.head_end or hi, lo))
        items: list[tuple[int, int, Unit | None, tuple[str, ...]]] = []
        if first > lo:
            items.append((lo, first, None, scope))  # the signature and what precedes members
        pos = first
        for g in groups:
            end = min(max(pos, g[-1].end), hi)
            items.append((pos, end, g[0] if len(g) == 1 else _group_unit(g), inner))
            pos = end
        if hi > pos:  # the closing brace and trailing comments go with the last member
            s, _, u, sc = items[-1]
            items[-1] = (s, hi, u, sc)
        return items

    def lines(self, text: str, lo: int, hi: int, scope: tuple[str, ...], fits: Fits
              ) -> list[Piece]:
        """``text[lo:hi]`` cut at lines (`line_pieces`), then halved at a line end while a
        piece does not `fit` the token cap."""
        out: list[Piece] = []
        todo = line_pieces(text, lo, hi, self.size)[::-1]
        while todo:
            a, b = todo.pop()
            if b - a > 1 and not fits(a, b, scope):
                mid = text.rfind("\n", a, (a + b) // 2) + 1
                mid = mid if a < mid < b else (a + b) // 2
                todo += [(mid, b), (a, mid)]
                continue
            out.append(Piece(a, b, scope, {"split": "lines"}))
        return out

    def _pack(self, text: str, items, fits: Fits) -> list[Piece]:
        """Pack consecutive items into pieces of at most `size`, greedily and in order, cutting
        where the author left a blank line: a run that must end where no blank line separates
        it from the next item ends instead at its last blank line in its second half, when it
        has one. An item too big for one piece is opened in place (its signature and members
        join the packing, so the imports and the head of a long class share a piece); an item
        with no members is cut at lines."""
        out: list[Piece] = []
        run: list[tuple[int, int, Unit | None, tuple[str, ...]]] = []

        def emit(part) -> None:
            names = [u.name for _, _, u, _ in part
                     if u is not None and u.name and (u.is_def or u.kind == "group")]
            out.append(Piece(part[0][0], part[-1][1], part[0][3],
                             {"symbols": names, "units": len(part)}))

        def flush(before: int | None = None) -> None:
            """End the run (before an item starting at `before` that does not fit)."""
            if before is not None and len(run) > 1 and not blank_line_at(text, before):
                for j in range(len(run) - 1, 0, -1):
                    if run[j][0] - run[0][0] < self.size // 2:
                        break
                    if blank_line_at(text, run[j][0]):
                        emit(run[:j])
                        del run[:j]
                        return
            if run:
                emit(run)
                run.clear()

        queue = list(reversed(items))
        while queue:
            item = queue.pop()
            s, e, u, sc = item
            if not fits(s, e, sc):
                sub = None
                if u is not None:  # a group opens as its last unit: comments join its signature
                    member = u.children[-1] if u.kind == "group" else u
                    sub = self.items(text, member, sc, s, e)
                if sub and self.pack:
                    queue.extend(reversed(sub))
                    continue
                flush()
                out.extend(self.lines(text, s, e, sc, fits) if sub is None
                           else self._pack(text, sub, fits))
                continue
            if run and (not self.pack or not fits(run[0][0], e, run[0][3])):
                flush(s if self.pack else None)
                if run and not fits(run[0][0], e, run[0][3]):
                    flush()
            run.append(item)
        flush()
        return out

    # -- output

    def chunk(self, doc: Document) -> list[Chunk]:
        text = doc.text
        if not text.strip():
            return []
        root, lang, notes = self.parse(doc)
        name = [f"# {PurePath(doc.path).name}"] if doc.path else []
        imports: list[tuple[int, int]] = []
        if root is not None:
            imports = [(u.start, u.end) for u in root.children
                       if u.kind in _IMPORT_TYPES or u.kind in ("Import", "ImportFrom")]
        head, omitted = self.import_prefix(doc, imports)
        fits = self.fits_for(text, [*name, *head], self.size)
        wider = self.fits_for(text, [*name, *head], self.size + self.overlap)
        if root is None:
            msg = f"{doc.where(0)}: {notes['fallback']}; cut at lines instead"
            warnings.warn(msg, CodeParseWarning, stacklevel=2)
            self._fallbacks.append(doc.id)
            pieces = self.lines(text, 0, len(text), (), fits)
            notes = {**notes, "parsed_by": "lines"}
        else:
            if notes.get("parse_errors"):
                self._tolerated.append(doc.id)
            if fits(0, len(text), ()):
                pieces = [Piece(0, len(text), (), {"units": 1})]
            else:
                pieces = self.pieces(text, root, (), 0, len(text), fits)
        out = []
        for i, p in enumerate(pieces):
            s, e = trim_span(text, p.start, p.end)
            if self.overlap and i and e > s:  # whole lines of the code before, up to `overlap`
                back = text.find("\n", max(pieces[i - 1].start, s - self.overlap) - 1, s)
                if 0 <= back < s - 1 and wider(back + 1, e, p.scope):
                    s = trim_span(text, back + 1, e)[0]
            if e <= s:
                continue
            holds = any(a < e and s < b for a, b in imports)
            lines = self.prefix_lines([*name, *([] if holds else head), *p.scope])
            prefix = "\n".join(lines)
            meta = {"language": lang, **notes, **p.meta, "scope": list(p.scope)}
            if len(lines) < len(name) + len(p.scope) + (0 if holds else len(head)):
                meta["prefix_lines_dropped"] = (len(name) + len(p.scope) - len(lines)
                                                + (0 if holds else len(head)))
            if omitted and not holds:
                meta["imports_omitted"] = omitted
            out.append(self.make(doc, s, e, prefix=prefix, **meta))
        return self.finish(doc, out)

    def fits_for(self, text: str, head: list[str], size: int) -> Fits:
        """Does ``text[s:e]`` fit one chunk under the enclosing signatures `scope`? At most
        `size` characters (`size` + `overlap` once the overlap is added), and with `max_tokens` set, at most that many tokens of prefix (the
        file's head lines counted whether or not the chunk gets them) and body."""
        if self.max_tokens is None:
            return lambda s, e, scope: e - s <= size
        from ..text.tokens import get_tokenizer

        tok, cap = get_tokenizer(self.tokenizer), self.max_tokens

        def fits(s: int, e: int, scope: tuple[str, ...]) -> bool:
            if e - s > size:
                return False
            prefix = "\n".join(self.prefix_lines([*head, *scope]))
            body = text[s:e].strip()
            return tok.count(f"{prefix}\n\n{body}" if prefix else body) <= cap

        return fits

    def prefix_lines(self, lines: list[str]) -> list[str]:
        """With `max_tokens` set, the prefix may take at most half of it: its first lines
        (file name, then imports, then the outer signatures) are dropped until it fits."""
        if self.max_tokens is None:
            return lines
        from ..text.tokens import get_tokenizer

        tok = get_tokenizer(self.tokenizer)
        while lines and tok.count("\n".join(lines)) > self.max_tokens // 2:
            lines = lines[1:]
        return lines

    def import_prefix(self, doc: Document, imports: Sequence[tuple[int, int]]
                      ) -> tuple[list[str], int]:
        """The import lines for the prefix (up to `import_chars` characters, whole lines) and
        how many import lines did not fit."""
        lines: list[str] = []
        taken, omitted = 0, 0
        for a, b in imports:
            line = _SPACE.sub(" ", doc.text[a:b]).strip()
            if omitted or taken + len(line) > self.import_chars:
                omitted += 1
                continue
            lines.append(line)
            taken += len(line) + 1
        return lines, omitted


def _group_unit(group: Sequence[Unit]) -> Unit:
    """Comments/attributes and the member they belong to, as one unit that opens to its
    parts (so a too-long group is cut between them)."""
    return Unit(group[0].start, group[-1].end, "group", group[-1].name, None, False,
                lambda: list(group))
