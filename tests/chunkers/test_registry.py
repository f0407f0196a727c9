"""The invariants every registered chunker must hold, parametrized from the registry itself
(`ragkit.chunkers.REGISTRY`): a chunker added there is tested here without a line changed.

Each chunker runs with its default settings on a few course documents (one of each kind the
router tells apart) and on hypothesis-generated Markdown, and must give: exact offsets (every
chunk's text is its span of the document, in order, nothing but whitespace left out), the prefix
apart from the body, deterministic and distinct ids, and no chunk over the cap the chunker
declares (`ragkit.chunkers.lint.chunk_cap`, in the chunker's own unit: its tokenizer or characters; a
single table row or list item, which no chunker cuts, excepted).
"""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragkit.chunkers import REGISTRY
from ragkit.chunkers.lint import atomic_unit, cap_findings, chunk_cap
from ragkit.chunkers.semantic import LexicalEmbedder
from ragkit.config import get_settings
from ragkit.text import load_corpus
from ragkit.types import Document, check_chunks

# chunkers that promise no cap, and why (anything else must declare one)
NO_CAP = {"sentences": "keeps a sentence longer than its size whole",
          "pages": "a page is one chunk, however long"}
EMBEDDING = {"semantic", "cluster_semantic"}  # hypothesis gives them a lexical embedder (speed)
EXAMPLES = min(get_settings().hypothesis_examples, 40)


@pytest.fixture(scope="module")
def course_docs():
    docs = load_corpus(get_settings().data_dir / "corpus").documents
    picked, seen = [], set()
    for d in docs:  # one document of each type, plus the source files
        kind = d.metadata.get("doc_type") or d.metadata.get("format")
        if kind not in seen:
            seen.add(kind)
            picked.append(d)
    return picked[:8]


def check(chunker, doc):
    chunks = chunker.chunk(doc)
    check_chunks(doc, chunks, complete=True)  # exact spans, in order, nothing lost
    for c in chunks:
        assert c.end > c.start and c.text == doc.text[c.start:c.end]
        assert c.embedding_text().endswith(c.text)  # the prefix is never in the body
        if c.prefix:
            assert c.embedding_text() == f"{c.prefix}\n\n{c.text}"
    again = chunker.chunk(doc)
    assert [c.id for c in again] == [c.id for c in chunks]  # deterministic ids
    assert len({c.id for c in chunks}) == len(chunks)  # distinct ids
    over = [f for f in cap_findings(doc, chunks, chunker)
            if atomic_unit(doc, next(c for c in chunks if c.id == f.chunk_id)) is None]
    assert not over, over[0].message
    return chunks


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_registered_chunker_on_course_documents(name, course_docs):
    chunker = REGISTRY[name]()
    for doc in course_docs:
        if name not in NO_CAP:
            assert chunk_cap(chunker, doc) is not None, f"{name} declares no cap"
        assert check(chunker, doc), f"{name}: no chunks for {doc.id}"


@pytest.mark.parametrize("name", sorted(REGISTRY))
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(text=st.lists(st.one_of(
    st.text(min_size=1, max_size=80), st.sampled_from(
        ["# Title", "## Section 1.2", "- item", "| a | b |\n|---|---|\n| 1 | 2 |",
         "```\ndef f():\n    return 1\n```", "**Ana (host):** Hello. Welcome.", "GET /v1/x",
         "The same sentence again. " * 40])), max_size=10).map("\n\n".join))
def test_registered_chunker_on_generated_text(name, text):
    kw = {"embedder": LexicalEmbedder()} if name in EMBEDDING else {}
    check(REGISTRY[name](**kw), Document("gen", text))
