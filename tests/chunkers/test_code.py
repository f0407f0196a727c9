"""The code chunker: parser units, exact offsets (non-ASCII included), prefixes, fallbacks."""

import ast
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragkit.chunkers import CodeChunker, Router, get_chunker
from ragkit.chunkers.code import CodeParseWarning
from ragkit.chunkers.code_units import detect_language, language_of
from ragkit.types import Document

PYTHON = '''"""Refunds."""
import math
from decimal import Decimal

RATE = Decimal("0.02")


def fee(amount):
    return amount * RATE


class Quote(Base):
    """A quote."""

    def total(self):
        return self.amount + fee(self.amount)

    def rounded(self):
        value = self.total()
        return math.ceil(value)

    def describe(self):
        return f"{self.amount} plus {fee(self.amount)} in fees"
'''

RUST = '''//! Grid rows — with a non-ASCII “comment”.
use std::cmp::{max, min};
use std::ops::Index;

/// A row of cells: ünïcödé 日本語 🎉 before the definitions.
#[derive(Clone, Debug)]
pub struct Row<T> {
    inner: Vec<T>,
    pub occ: usize,
}

impl<T: Clone + Default> Row<T> {
    /// Create a new terminal row — «naïve».
    pub fn new(columns: usize) -> Row<T> {
        debug_assert!(columns >= 1);
        let mut inner: Vec<T> = Vec::with_capacity(columns);
        inner.resize_with(columns, T::default);
        Row { inner, occ: 0 }
    }

    /// Resize the row — “grow” or shrink.
    pub fn grow(&mut self, columns: usize) {
        if self.inner.len() >= columns {
            return;
        }
        self.inner.resize_with(columns, T::default);
    }

    pub fn shrink(&mut self, columns: usize) -> Option<Vec<T>> {
        if self.inner.len() <= columns {
            return None;
        }
        let mut new_row = self.inner.split_off(columns);
        let index = new_row.iter().rposition(|c| c.is_some()).map_or(0, |i| i + 1);
        new_row.truncate(index);
        self.occ = min(self.occ, columns);
        Some(new_row)
    }
}
'''

JAVASCRIPT = '''import { createHmac } from "node:crypto";

// Tolérance — in seconds ⏱
export const TOLERANCE = 300;

/** Split the header: «t=…,v1=…». */
export function parse(header) {
  const parts = header.split(",");
  const out = {};
  for (const p of parts) {
    const [k, v] = p.split("=");
    out[k] = v;
  }
  return out;
}

export class Verifier {
  constructor(secret) {
    this.secret = secret;
  }

  verify(body, header) {
    const { t, v1 } = parse(header);
    const mac = createHmac("sha256", this.secret).update(`${t}.${body}`).digest("hex");
    return mac === v1 && Math.abs(Date.now() / 1000 - Number(t)) < TOLERANCE;
  }
}
'''


def chunks_of(text, path=None, **kw):
    doc = Document("d", text, path=path)
    return doc, CodeChunker(**kw).chunk(doc)


def assert_exact(doc, chunks, size, disjoint=True):
    assert chunks, "no chunks"
    for c in chunks:
        assert doc.text[c.start:c.end] == c.text
        assert 0 < len(c.text) <= size
    covered = set()
    for c in chunks:
        covered.update(range(c.start, c.end))
    lost = [i for i, ch in enumerate(doc.text) if not ch.isspace() and i not in covered]
    assert not lost, f"lost characters at {lost[:5]}"
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    starts = [c.start for c in chunks]
    ends = [c.end for c in chunks]
    if disjoint:
        assert all(e <= s for e, s in zip(ends, starts[1:])), "chunks overlap"


@pytest.mark.parametrize("text, path, language", [
    (PYTHON, "refunds.py", "python"), (RUST, "row.rs", "rust"),
    (JAVASCRIPT, "webhook.js", "javascript")])
@pytest.mark.parametrize("size", [120, 250, 400, 5000])
def test_offsets_are_exact_and_cover_the_file(text, path, language, size):
    doc, chunks = chunks_of(text, path, size=size, overlap=0)
    assert_exact(doc, chunks, size)
    doc, overlapping = chunks_of(text, path, size=size)  # default overlap: a fifth of size
    assert_exact(doc, overlapping, size + size // 5, disjoint=False)
    assert {c.metadata["language"] for c in chunks} == {language}
    assert {c.metadata["parsed_by"] for c in chunks} == {"ast" if language == "python"
                                                        else "tree-sitter"}


def test_non_ascii_offsets_land_on_the_definitions():
    """tree-sitter's byte offsets converted to characters: with multi-byte text before them,
    the chunks still start exactly at the doc comment of each method."""
    assert len(RUST.encode()) > len(RUST)  # the test needs multi-byte characters
    doc, chunks = chunks_of(RUST, "row.rs", size=300, overlap=0)
    starts = [c.text.split("\n")[0].strip() for c in chunks]
    assert "/// Create a new terminal row — «naïve»." in starts
    assert "/// Resize the row — “grow” or shrink." in starts
    assert "pub fn shrink(&mut self, columns: usize) -> Option<Vec<T>> {" in starts
    struct = next(c for c in chunks if "pub struct Row<T>" in c.text)
    assert struct.text.startswith("//! Grid rows") or struct.text.startswith("/// A row")
    assert struct.text.rstrip().endswith("pub occ: usize,\n}".rstrip())
    doc, js = chunks_of(JAVASCRIPT, "webhook.js", size=260, overlap=0)
    verify = next(c for c in js if "verify(body, header)" in c.text)
    assert verify.text.startswith("verify(body, header) {")
    assert verify.text.endswith("< TOLERANCE;\n  }\n}")


def test_prefix_holds_the_imports_and_the_enclosing_class_signature():
    doc, chunks = chunks_of(PYTHON, "refunds.py", size=120, import_chars=200, overlap=0)
    describe = next(c for c in chunks if "def describe" in c.text)
    assert describe.prefix == ("# refunds.py\nimport math\nfrom decimal import Decimal\n"
                               "class Quote(Base):")
    assert describe.text.startswith("def describe(self):")
    head = next(c for c in chunks if "import math" in c.text)
    assert head.prefix == "# refunds.py"  # the chunk that holds the imports does not repeat them
    doc, chunks = chunks_of(RUST, "row.rs", size=300, import_chars=200, overlap=0)
    grow = next(c for c in chunks if "pub fn grow" in c.text)
    assert grow.prefix.split("\n") == ["# row.rs", "use std::cmp::{max, min};",
                                       "use std::ops::Index;",
                                       "impl<T: Clone + Default> Row<T>"]
    assert grow.metadata["scope"] == ["impl<T: Clone + Default> Row<T>"]


def test_import_prefix_is_capped_and_the_omission_recorded():
    doc, chunks = chunks_of(PYTHON, "refunds.py", size=120, import_chars=12, overlap=0)
    describe = next(c for c in chunks if "def describe" in c.text)
    assert describe.prefix == "# refunds.py\nimport math\nclass Quote(Base):"
    assert describe.metadata["imports_omitted"] == 1
    doc, chunks = chunks_of(PYTHON, "refunds.py", size=120, import_chars=0)
    assert all("import" not in c.prefix for c in chunks)


def test_a_long_function_is_cut_between_statements_with_its_signature_repeated():
    body = "\n".join(f"    total_{i} = compute(value, {i}) + offset * {i}" for i in range(40))
    text = f"import os\n\n\ndef long_function(value, offset):\n{body}\n    return total_0\n"
    doc, chunks = chunks_of(text, "long.py", size=300, import_chars=200, overlap=0)
    assert_exact(doc, chunks, 300)
    statements = ast.parse(text).body[1].body
    lines = text.split("\n")
    starts = {sum(len(ln) + 1 for ln in lines[:s.lineno - 1]) + s.col_offset for s in statements}
    ends = {sum(len(ln) + 1 for ln in lines[:s.end_lineno - 1]) + s.end_col_offset
            for s in statements}
    pieces = [c for c in chunks if "total_" in c.text]
    assert len(pieces) > 3
    # the import line shares the first piece with the function's head
    assert pieces[0].text.startswith("import os\n\n\ndef long_function(value, offset):")
    for c in pieces[1:]:
        assert c.prefix == "# long.py\nimport os\ndef long_function(value, offset):"
        assert c.start in starts and c.end in ends  # cut at statement boundaries only


def test_pieces_end_where_the_author_left_a_blank_line():
    """A long function written in paragraphs (statements, blank line, statements ...) is cut at
    its blank lines, not wherever the size runs out, as long as a blank line lies in the
    second half of the piece; with no blank lines it is still cut between statements."""
    paragraphs = ["\n".join(f"    step_{p}_{i} = work({p}, {i})" for i in range(4))
                  for p in range(12)]
    text = "def pipeline():\n" + "\n\n".join(paragraphs) + "\n    return step_0_0\n"
    doc, chunks = chunks_of(text, "p.py", size=400, overlap=0)
    assert_exact(doc, chunks, 400)
    assert len(chunks) > 3
    for c in chunks[1:]:
        assert text[:c.start].endswith("\n\n    "), repr(text[c.start - 12:c.start + 12])
    dense = text.replace("\n\n", "\n")  # no blank lines: cut between statements
    doc, chunks = chunks_of(dense, "p.py", size=400, overlap=0)
    assert_exact(doc, chunks, 400)
    assert all(c.text.startswith("step_") for c in chunks[1:])


def test_a_class_too_long_for_one_piece_opens_in_place():
    """The code before a long class (imports, a constant) and the class's head share a piece;
    the class's later methods carry its signature in the prefix."""
    methods = "\n\n".join(f"    def m{i}(self):\n        return self.v + {i} * {i}"
                           for i in range(8))
    text = f"import os\nLIMIT = 3\n\n\nclass Big:\n    v = 1\n\n{methods}\n"
    doc, chunks = chunks_of(text, "big.py", size=200, overlap=0)
    assert_exact(doc, chunks, 200)
    assert chunks[0].text.startswith("import os") and "class Big:" in chunks[0].text
    assert all(c.prefix == "# big.py\nclass Big:" for c in chunks[1:])


def test_small_units_are_packed_and_can_be_kept_apart():
    text = "\n\n".join(f"def f{i}(x):\n    return x + {i}" for i in range(6)) + "\n"
    # three 27-character functions fit
    doc, packed = chunks_of(text, "small.py", size=100, overlap=0)
    assert [c.metadata["symbols"] for c in packed] == [["f0", "f1", "f2"], ["f3", "f4", "f5"]]
    doc, alone = chunks_of(text, "small.py", size=30, pack=False, overlap=0)
    assert [c.text.split("(")[0] for c in alone] == [f"def f{i}" for i in range(6)]


def test_an_unparseable_file_is_cut_at_lines_with_a_warning_and_a_flag():
    text = "def broken(:\n    pass\n\nx = 1\n" * 20
    chunker = CodeChunker(size=100, overlap=0)
    doc = Document("b", text, path="b.py")
    with pytest.warns(CodeParseWarning, match=r"b\.py:1: python SyntaxError at line 1"):
        chunks = chunker.chunk_all([doc])
    assert_exact(doc, chunks, 100)
    assert {c.metadata["parsed_by"] for c in chunks} == {"lines"}
    assert all("SyntaxError" in c.metadata["fallback"] for c in chunks)
    assert chunker.flags == ["code_line_fallback:1"]
    # a tree-sitter language whose parse is mostly errors
    junk = Document("j", ")))) ]]] @@@ \"unterminated\n" * 30, {"language": "rust"})
    with pytest.warns(CodeParseWarning, match="rust parse errors cover"):
        chunks = CodeChunker(size=200).chunk(junk)
    assert {c.metadata["parsed_by"] for c in chunks} == {"lines"}
    # a language with no grammar
    with pytest.warns(CodeParseWarning, match="no grammar"):
        chunks = CodeChunker(size=200).chunk(Document("k", "x y z\n", {"language": "klingon"}))
    assert [c.text for c in chunks] == ["x y z"]


def test_language_from_metadata_suffix_or_content():
    assert language_of(Document("a", "", {"language": "rs"})) == "rust"
    assert language_of(Document("a", "", path="src/x.hpp")) == "cpp"
    assert language_of(Document("a", "")) == ""
    assert detect_language(RUST)[0] == "rust"
    assert detect_language(JAVASCRIPT)[0] == "javascript"
    assert detect_language(PYTHON)[0] == "python"
    assert detect_language("public class A { void f() { int x = 1; } }")[0] == "java"
    assert detect_language("template <typename T> class A { public: T f() const { return T(); } };"
                           )[0] == "cpp"
    doc, chunks = chunks_of(RUST, None, size=300)  # no path: detected from the text
    assert {c.metadata["language"] for c in chunks} == {"rust"}
    assert all(c.metadata["language_detected"] for c in chunks)



def test_a_long_file_is_recognised_from_its_opening_and_parsed_once_whole(monkeypatch):
    """Detection reads the first DETECT_SAMPLE characters, cut at a line end; the grammar it
    picks then parses the whole file, whose chunks still cover every character."""
    from ragkit.chunkers import code_units as code

    long_rust = "\n".join([RUST] * (2 + code.DETECT_SAMPLE // len(RUST)))
    assert len(long_rust) > code.DETECT_SAMPLE
    seen = []
    real = code._parser

    class Spy:
        def __init__(self, lang):
            self.parser = real(lang)

        def parse(self, data):
            seen.append(len(data))
            return self.parser.parse(data)

    monkeypatch.setattr(code, "_parser", Spy)
    assert detect_language(long_rust)[0] == "rust"
    sample = long_rust[:code.DETECT_SAMPLE].encode()  # parsers read bytes
    assert seen and max(seen) <= len(sample) < len(long_rust.encode())
    assert sample[:seen[0]].endswith(b"\n")
    seen.clear()
    doc, chunks = chunks_of(long_rust, None, size=250, overlap=0)
    assert {c.metadata["language"] for c in chunks} == {"rust"}
    assert max(seen) == len(long_rust.encode())  # the chosen grammar read the whole file
    assert_exact(doc, chunks, 250)


@pytest.mark.parametrize("path", ["app/refunds.py", "web/webhook.js"])
def test_router_sends_source_files_to_the_code_chunker(path):
    text = PYTHON if path.endswith(".py") else JAVASCRIPT
    doc = Document("src", text, path=path)
    router = Router()
    assert router.classify(doc) == "code"
    assert isinstance(router.mapping["code"], CodeChunker)
    chunks = router.chunk(doc)
    assert {c.metadata["routed_to"] for c in chunks} == {router.mapping["code"].label}
    assert {c.metadata["parsed_by"] for c in chunks} <= {"ast", "tree-sitter"}
    assert [(c.start, c.end, c.prefix) for c in chunks] == \
        [(c.start, c.end, c.prefix) for c in router.mapping["code"].chunk(doc)]


def test_registry_and_import_path():
    assert isinstance(get_chunker("code", size=500), CodeChunker)
    from ragkit.chunkers import CodeChunker as Again  # noqa: F401  (the public name)
    assert get_chunker("code").name == "code"


# code-ish text: identifiers, keywords, brackets, strings, indentation and non-ASCII words
_token = st.sampled_from(["def", "fn", "class", "impl", "function", "return", "if", "{", "}",
                          "(", ")", ":", ";", "=", "+", "->", "\"s\"", "'c'", "x", "y_1",
                          "naïve", "日本", "🎉", "#", "//", "/*", "*/", "@d", "use", "import"])
_line = st.tuples(st.sampled_from(["", "    ", "\t", "        "]),
                  st.lists(_token, min_size=0, max_size=10).map(" ".join)).map("".join)
code_texts = st.lists(_line, min_size=0, max_size=40).map("\n".join)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=code_texts, language=st.sampled_from([None, "python", "rust", "javascript", "java"]),
       size=st.sampled_from([40, 120, 400]))
def test_offsets_hold_on_generated_code(text, language, size):
    doc = Document("g", text, {"language": language} if language else {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CodeParseWarning)
        chunks = CodeChunker(size=size).chunk(doc)
    if not text.strip():
        assert chunks == []
        return
    assert_exact(doc, chunks, size + size // 5, disjoint=False)


@pytest.mark.parametrize("text, path", [(PYTHON, "refunds.py"), (RUST, "row.rs")])
def test_token_cap_holds_with_the_prefix(text, path):
    from ragkit.text import get_tokenizer

    minilm = get_tokenizer("minilm")
    doc, chunks = chunks_of(text, path, size=5000, max_tokens=64, import_chars=200)
    assert_exact(doc, chunks, 6000, disjoint=False)
    assert max(minilm.count(c.embedding_text()) for c in chunks) <= 64
    assert len(chunks) > len(chunks_of(text, path, size=5000)[1])


def test_overlap_adds_whole_lines_of_the_code_before():
    doc, plain = chunks_of(RUST, "row.rs", size=300, overlap=0)
    doc, over = chunks_of(RUST, "row.rs", size=300, overlap=100)
    assert len(over) == len(plain) and over[0].span == plain[0].span
    widened = 0
    for a, b in zip(plain, over):
        assert b.end == a.end and a.start - 100 <= b.start <= a.start
        assert len(b.text) <= 400 and b.prefix == a.prefix
        if b.start < a.start:
            widened += 1
            assert doc.text[b.start - 1] == "\n" or not doc.text[b.start - 1].strip()
    assert widened >= 2
