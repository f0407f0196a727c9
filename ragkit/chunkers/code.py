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

import re
import warnings
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Callable, Sequence

from ..types import Chunk, Document, trim_span
from .base import Chunker
from .code_units import (_IMPORT_TYPES, MAX_ERROR_SHARE, Unit, _attach, _group_unit, blank_line_at,
                         detect_language, language_of, line_pieces, python_units,
                         tree_sitter_units)

_SPACE = re.compile(r"\s+")
Fits = Callable[[int, int, tuple], bool]


class CodeParseWarning(UserWarning):
    """A source file could not be parsed and was cut at lines instead."""


@dataclass
class Piece:
    """A chunk to be: a span, the signatures of the definitions around it, and its notes."""

    start: int
    end: int
    scope: tuple[str, ...]
    meta: dict[str, Any] = field(default_factory=dict)


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

    @property
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
        `size` characters (`size` + `overlap` once the overlap is added), and with `max_tokens`
        set, at most that many tokens of prefix (the file's head lines counted whether or not
        the chunk gets them) and body."""
        if self.max_tokens is None:
            return lambda s, e, scope: e - s <= size
        from ..text.tokens import count_tokens

        tok, cap = self.tokenizer, self.max_tokens

        def fits(s: int, e: int, scope: tuple[str, ...]) -> bool:
            if e - s > size:
                return False
            prefix = "\n".join(self.prefix_lines([*head, *scope]))
            body = text[s:e].strip()
            return count_tokens(Chunk.joined(prefix, body), tok) <= cap

        return fits

    def prefix_lines(self, lines: list[str]) -> list[str]:
        """With `max_tokens` set, the prefix may take at most half of it: its first lines
        (file name, then imports, then the outer signatures) are dropped until it fits."""
        if self.max_tokens is None:
            return lines
        from ..text.tokens import count_tokens

        while lines and count_tokens("\n".join(lines), self.tokenizer) > self.max_tokens // 2:
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
