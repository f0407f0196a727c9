"""Chunkers for classes of documents, each cutting where that kind of document has its joints.

A contract is read clause by clause, an API reference endpoint by endpoint, a transcript turn by
turn, a chat as whole threads, a price list row by row, and source code definition by
definition. Every chunker here first cuts a document into *groups* of consecutive blocks (one
clause, one endpoint, two or three speaker turns ...), emits each group as one chunk when it fits
the hard cap (prefix included), and otherwise packs the group with `StructureChunker`'s rules
(sentences, list items, table rows with the header in the prefix). A group made only of headings
is joined to the group after it, and headings at the end of a group move to the next one, so a
heading never ends a chunk.

- `ClauseChunker` (contract): a numbered clause (``1.2 ...`` paragraph or heading) per chunk, the
  section heading above it in the prefix;
- `SectionChunker` (memo, paper): a section per chunk, with the title and the first sentences of
  the abstract (or summary, or first paragraph) in the prefix;
- `ApiChunker` (API reference): an endpoint or method per chunk, its resource heading in prefix;
- `TranscriptChunker`: two or three speaker turns (``**Name (Role):** ...``) per chunk;
- `ChatChunker`: a thread (a section, or the text between rules) per chunk, cut between messages
  into balanced parts only when it exceeds the hard cap;
- `TableRowChunker`: every table row a chunk, the header row re-attached in the prefix; the
  rest of the document chunked by structure;
- `CodeChunker`: each top-level function or class a chunk, the module's import lines in the
  prefix; the code between definitions in chunks of its own. Python is parsed with `ast`.
  Other languages use a documented fallback, not a parser: C-like languages (TypeScript,
  JavaScript, Go, Java, Rust, C ...) are cut into top-level items by tracking brace depth
  (strings and comments skipped), anything else at blank lines, as is Python that does not
  parse. (tree-sitter-language-pack fetches its grammars at run time, which fails offline, so
  it is not used.)
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import PurePath

from ..documents import plain_blocks
from ..types import Block, Chunk, Document
from .sentences import TokenIndex, pieces, sentence_cuts  # noqa: F401
from .structure import (Breadcrumb, Costs, Heading, StructureChunker,  # noqa: F401
                        abstract_index, heading_paths, heading_title, measured_blocks)
# The grouping framework and the document-class chunkers live in their own modules; their names
# stay importable from here. What follows below is the source-code chunker.
from .doc_classes import (CLAUSE, ENDPOINT, SPEAKER, ApiChunker, ChatChunker,  # noqa: F401
                          ClauseChunker, SectionChunker, TableRowChunker, TranscriptChunker,
                          speaker)
from .grouping import (Group, GroupChunker, PrefixFn, heading_or_paragraph,  # noqa: F401
                       segments)


# --------------------------------------------------------------------------- source code

BRACE_LANGUAGES = {"ts", "tsx", "js", "jsx", "mjs", "go", "java", "rs", "c", "cpp", "cc", "h",
                   "hpp", "cs", "kt", "swift", "scala", "php"}
_DEF = re.compile(r"\s*(?:(?:export|default|declare|abstract|async|public|private|protected|"
                  r"static|final|pub(?:\([\w:]+\))?|unsafe|extern)\s+)*(?:function\*?|class|"
                  r"interface|enum|type|struct|impl|trait|fn|func|namespace|module|object)\b")
_IMPORT = re.compile(r"\s*(?:import\b|export\s+\*\s+from\b|#\s*include\b|using\s|use\s|"
                     r"package\s|(?:const|let|var)\s+[\w{}\s,]+=\s*require\()")
_CONTINUES = ("=", ",", "(", "[", "+", "-", "*", "/", "&&", "||", "?", ":", ".", "|", "&", "=>")
_LINE = re.compile(r"\r\n|\r|\n")


def language_of(doc: Document) -> str:
    """'python', a brace language's suffix (e.g. 'ts'), or '' when unknown."""
    lang = str(doc.metadata.get("language") or "").lower()
    if not lang and doc.path:
        lang = PurePath(doc.path).suffix.lstrip(".").lower()
    return "python" if lang in ("py", "python") else lang


def _line_starts(text: str) -> list[int]:
    return [0, *(m.end() for m in _LINE.finditer(text))]


@dataclass
class CodeUnit:
    """A top-level piece of a source file: a definition, imports, or other code.

    `parts` are the starts of its members (methods of a class), where it may be cut."""

    start: int
    end: int
    kind: str  # "def" | "import" | "code"
    name: str = ""
    parts: list[int] = field(default_factory=list)


def python_units(text: str) -> list[CodeUnit]:
    """Top-level statements of a Python module via `ast` (raises SyntaxError / ValueError)."""
    tree = ast.parse(text)
    starts = _line_starts(text)
    lines = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])]

    def first_line(node: ast.stmt, floor: int) -> int:
        """First line of a statement with its decorators and the comment lines right above."""
        line = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        while line - 1 > floor and lines[line - 2].lstrip().startswith("#"):
            line -= 1
        return line

    units, prev_end = [], 0
    for node in tree.body:
        defn = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        kind = "def" if defn else "import" if isinstance(node, (ast.Import, ast.ImportFrom)) \
            else "code"
        a = first_line(node, prev_end) if defn else node.lineno
        a, b = max(a, prev_end + 1), min(max(node.end_lineno or node.lineno, a), len(starts))
        parts = []
        if isinstance(node, ast.ClassDef):
            floor = node.lineno
            for child in node.body:
                parts.append(starts[first_line(child, floor) - 1])
                floor = child.end_lineno or child.lineno
        units.append(CodeUnit(starts[a - 1], starts[b] if b < len(starts) else len(text), kind,
                              getattr(node, "name", ""), parts))
        prev_end = b
    return _fill(text, units)


def brace_units(text: str) -> list[CodeUnit]:
    """Top-level items of a C-like source file by brace depth (the fallback, not a parser).

    A line starts a new item when it is at depth 0 and the previous code line is complete (it
    does not end with an operator or a comma, and is not an ``@decorator`` / ``#[attribute]``
    line); comment lines stick to the code right below them. An item is a definition when its
    first code line declares one (``function``, ``class``, ``interface``, ``fn`` ...) or it
    opens a brace body over several lines; import lines become imports.
    """
    depth, quote, block_comment = 0, "", False
    info = []  # per line: (start, end, depth at start, has code, code text)
    starts = _line_starts(text)
    for a, b in zip(starts, [*starts[1:], len(text)]):
        if quote in ("'", '"'):
            quote = ""  # plain strings end at the line's end
        # a line inside a template string or a block comment continues the item above it
        line_depth, code, i = depth + (quote == "`" or block_comment), [], a
        while i < b:
            ch = text[i]
            if block_comment:
                if text.startswith("*/", i):
                    block_comment, i = False, i + 2
                    continue
            elif quote:
                if ch == "\\":
                    i += 1
                elif ch == quote:
                    quote = ""
                code.append(ch)
            elif text.startswith("//", i):
                break
            elif text.startswith("/*", i):
                block_comment, i = True, i + 2
                continue
            else:
                if ch in "'\"`":
                    quote = ch
                elif ch in "{([":
                    depth += 1
                elif ch in "})]":
                    depth = max(depth - 1, 0)
                code.append(ch)
            i += 1
        info.append((a, b, line_depth, "".join(code).strip()))
    top = _item_starts(text, info, 0)
    members = _item_starts(text, info, 1)
    units: list[CodeUnit] = []
    for (a, b, _, _), new, member in zip(info, top, members):
        if new or not units:
            units.append(CodeUnit(a, b, "code"))
        elif text[a:b].strip():
            units[-1].end = b
        if member and units[-1].start < a:
            units[-1].parts.append(a)
    for u in units:
        body = [ln for ln in text[u.start:u.end].splitlines() if ln.strip()]
        code_lines = [ln for ln in body if not ln.lstrip().startswith(("//", "/*", "*"))]
        head = code_lines[0] if code_lines else ""
        if _IMPORT.match(head):
            u.kind = "import"
        elif _DEF.match(head) or ("{" in text[u.start:u.end] and len(code_lines) > 1):
            u.kind = "def"
            m = re.search(r"(?:function\*?|class|interface|enum|type|struct|impl|trait|fn|func)"
                          r"\s+(?:\([^)]*\)\s*)?(\w+)", head)
            u.name = m.group(1) if m else ""
    return _fill(text, units)


def _item_starts(text: str, info: list[tuple[int, int, int, str]], level: int) -> list[bool]:
    """For each line: does a new item at brace depth `level` start there? (See `brace_units`.)"""
    flags, prev_code, prev_blank = [], "", True
    for a, b, d, code in info:
        if not text[a:b].strip():
            prev_blank = True
            flags.append(False)
            continue
        if d != level:
            new = False
            if d < level:  # the line that opens the body: its first member starts fresh
                prev_code, prev_blank = "", True
                flags.append(False)
                continue
        elif not code:  # a comment line: new unless it continues a comment right above
            new = prev_blank or bool(prev_code)
        else:
            new = (prev_blank or bool(prev_code)) and not (
                prev_code.endswith(_CONTINUES) or prev_code.startswith(("@", "#["))
                or code.startswith(("{", "}", ")", "]", ".", "?", ":", "&&", "||", "=>")))
        flags.append(new)
        prev_code, prev_blank = code, False
    return flags


def _fill(text: str, units: list[CodeUnit]) -> list[CodeUnit]:
    """Trim units and make sure every non-blank character belongs to one (gaps become code)."""
    out, pos = [], 0
    for u in units:
        if u.start > pos:
            out.append(CodeUnit(pos, u.start, "code"))
        u.start, pos = max(u.start, pos), max(u.end, pos)
        out.append(u)
    out.append(CodeUnit(pos, len(text), "code"))
    kept = []
    for u in out:
        u.start, u.end = pieces(text, u.start, u.end, [])[0] if text[u.start:u.end].strip() \
            else (u.start, u.start)
        if u.end > u.start:
            kept.append(u)
    return kept


class CodeChunker(GroupChunker):
    """Source code: each top-level function or class a chunk, the file name and the module's
    import lines in the prefix; runs of other top-level code (constants, docstring, imports)
    chunks of their own. A class over the hard cap is cut between its members, with its
    ``class ...`` line added to the prefix; anything else too big is cut at blank lines, then
    lines. `language` overrides the file suffix ('python', 'ts', 'go' ...)."""

    name = "code"

    def __init__(self, soft: int = 180, hard: int = 254, tokenizer: str = "minilm",
                 language: str | None = None):
        super().__init__(soft, hard, tokenizer, "none")
        self.language = language

    @property
    def label(self) -> str:
        return f"code({self.soft}/{self.hard},{self.tokenizer})"

    def units_of(self, doc: Document) -> tuple[list[CodeUnit], str]:
        """The file's top-level units and how they were found ('ast', 'braces', 'blank-lines')."""
        lang = self.language or language_of(doc)
        if lang in ("python", ""):
            try:
                return python_units(doc.text), "ast"
            except (SyntaxError, ValueError):
                pass
        if lang in BRACE_LANGUAGES or (not lang and "{" in doc.text):
            return brace_units(doc.text), "braces"
        return [CodeUnit(b.start, b.end, "code") for b in plain_blocks(doc.text)], "blank-lines"

    def chunk(self, doc: Document) -> list[Chunk]:
        text, costs = doc.text, Costs(self.tok)
        units, method = self.units_of(doc)
        name = PurePath(doc.path).name if doc.path else str(doc.metadata.get("title") or "")
        header = f"# {name}" if name else ""
        imports = [text[u.start:u.end] for u in units if u.kind == "import"]
        lines = [header] if header else []
        for imp in imports:  # the import lines, as many as a third of the hard cap allows
            if costs.prefix("\n".join([*lines, imp])) > self.hard // 3:
                break
            lines.append(imp)
        with_imports = "\n".join(lines)
        blocks: list[Block] = []
        groups: list[Group] = []
        runs: list[list[CodeUnit]] = []  # a definition alone, or a run of other top-level code
        for u in units:
            if u.kind != "def" and runs and runs[-1][0].kind != "def":
                runs[-1].append(u)
            else:
                runs.append([u])
        for run in runs:
            u = run[0]
            if u.kind == "def":
                spans = pieces(text, u.start, u.end, [p for p in u.parts if u.start < p < u.end])
            else:
                spans = [(v.start, v.end) for v in run]
            lo = len(blocks)
            blocks.extend(Block("code", s, e, text[s:e]) for s, e in spans)
            has_imports = any(v.kind == "import" for v in run)
            prefix = header if has_imports else with_imports
            fn = None
            if u.kind == "def":
                signature = next((ln.strip() for ln in text[u.start:u.end].splitlines()
                                  if ln.strip() and not ln.lstrip().startswith(
                                      ("#", "@", "//", "/*", "*"))), "")

                def fn(above, start, prefix=prefix, signature=signature, first=u.start):
                    return prefix if start <= first else "\n".join(
                        p for p in (prefix, signature) if p)
            kind = u.kind if u.kind == "def" else "imports" if has_imports else "code"
            groups.append(Group(lo, len(blocks), prefix,
                                {"symbol": u.name, "unit": kind, "parsed_by": method}, fn))
        counts = [self.tok.count(b.text) for b in blocks]
        return self.finish(doc, self.emit_groups(doc, blocks, counts, groups))
