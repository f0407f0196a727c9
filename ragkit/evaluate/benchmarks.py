"""The three benchmarks, loaded into the same types: documents + queries with gold spans.

- ``course``: the corpus and golden set written for this course (``data/``);
- ``chroma``: Chroma's chunking evaluation — five corpora, 472 questions whose references are
  character spans;
- ``anthropic``: Anthropic's contextual-retrieval set — 90 code files and 248 queries; the gold
  of a query is the character span of each golden chunk inside its file (a file's chunks join
  to its content exactly, so chunk i starts at the summed length of chunks 0..i-1).

The public files are never committed. `fetch` looks for them in this order: a local folder
named by ``RAGKIT_BENCHMARKS_DIR`` (e.g. ``../shared/benchmarks``), then ragkit's download cache,
then the public source (pinned commit, sha256 verified). Every file's sha256 is checked whichever
way it came; with no folder and no network you get an error that says what to set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..config import get_settings
from ..files import shown
from ..types import Chunk, Document, Query, Span
from .financebench import load_financebench
from .sources import (ANTHROPIC_COMMIT, CHROMA_COMMIT, CHROMA_CORPORA, FILES,  # noqa: F401
                      Benchmark, BenchmarkUnavailable, ChecksumError, fetch)


def _load_json_dataset(path: Path, fmt: str = "json"):
    from datasets import load_dataset

    return load_dataset(fmt, data_files=str(path), split="train")


def load_chroma(folder: str | Path | None = None) -> Benchmark:
    """Chroma's five corpora (doc_id = corpus name) and 472 span-anchored questions."""
    docs = []
    for name in CHROMA_CORPORA:
        path = fetch(f"chroma/corpora/{name}.md", folder)
        docs.append(Document(id=name, text=path.read_text(encoding="utf-8"),
                             metadata={"title": name, "doc_type": "benchmark"}, path=str(path)))
    by_id = {d.id: d for d in docs}
    rows = _load_json_dataset(fetch("chroma/questions_df.csv", folder), "csv")
    queries = []
    for i, row in enumerate(rows):
        refs = json.loads(row["references"])
        gold = []
        for ref in refs:
            doc = by_id[row["corpus_id"]]
            if doc.text[ref["start_index"]:ref["end_index"]] != ref["content"]:
                raise ValueError(f"chroma question {i}: reference does not match its span")
            gold.append(Span(row["corpus_id"], ref["start_index"], ref["end_index"]))
        queries.append(Query(id=f"chroma-{i:03d}", text=row["question"], gold=tuple(gold),
                             metadata={"corpus_id": row["corpus_id"]}))
    return Benchmark("chroma", docs, queries, info={"commit": CHROMA_COMMIT})


def load_anthropic(folder: str | Path | None = None) -> Benchmark:
    """Anthropic's 90 code files, their 737 upstream chunks, and 248 queries."""
    files = json.loads(fetch("anthropic/codebase_chunks.json", folder).read_text("utf-8"))
    docs, chunks, where = [], [], {}
    for f in files:
        doc = Document(id=f["doc_id"], text=f["content"],
                       metadata={"title": f["doc_id"], "doc_type": "code",
                                 "uuid": f["original_uuid"], "format": "code"})
        docs.append(doc)
        pos = 0
        for ch in sorted(f["chunks"], key=lambda c: c["original_index"]):
            end = pos + len(ch["content"])
            if doc.text[pos:end] != ch["content"]:
                raise ValueError(f"anthropic {f['doc_id']}: chunks do not join to the content")
            c = Chunk.make(doc, pos, end, strategy="upstream",
                           metadata={"doc_type": "code", "original_index": ch["original_index"]})
            chunks.append(c)
            where[(f["original_uuid"], ch["original_index"])] = (doc.id, pos, end)
            pos = end
        if pos != len(doc.text):
            raise ValueError(f"anthropic {f['doc_id']}: chunks cover {pos} of {len(doc.text)}")
    rows = _load_json_dataset(fetch("anthropic/evaluation_set.jsonl", folder))
    queries = []
    for i, row in enumerate(rows):
        gold = tuple(Span(*where[(u, int(ix))]) for u, ix in row["golden_chunk_uuids"])
        queries.append(Query(id=f"anthropic-{i:03d}", text=row["query"], gold=gold,
                             answer=row["answer"] or ""))
    return Benchmark("anthropic", docs, queries, chunks, info={"commit": ANTHROPIC_COMMIT})


def load_course(data_dir: str | Path | None = None) -> Benchmark:
    """The course corpus (``data/corpus``) and golden set (``data/golden/golden.jsonl``)."""
    from ..text.corpus import load_corpus
    from .golden import read_golden

    data_dir = Path(data_dir or get_settings().data_dir)
    corpus = load_corpus(data_dir / "corpus")
    queries = read_golden(data_dir / "golden" / "golden.jsonl", corpus.by_id())
    staged = data_dir / "golden" / "staged_failures.json"
    smoke_docs = sorted({d for s in json.loads(staged.read_text())
                         for d in [s["doc_id"], *s.get("related_doc_ids", [])]}
                        ) if staged.exists() else []
    return Benchmark("course", corpus.documents, queries, info={"smoke_docs": smoke_docs})


def _name_skipped(problem: Any, errors: list[str]) -> Any:
    """`problem` (a `Problem`), its "unknown document 'X'" said as what it is when X is the
    name of a file the load skipped: "document 'X' was skipped (path:line: reason)"."""
    import re

    m = re.search(r"unknown document '([^']*)'", problem.message)
    if not m:
        return problem
    for err in errors:
        where = re.match(r"(.*?):\d+: ", err)
        if where and Path(where.group(1)).stem == m.group(1):
            problem.message = problem.message[:m.start()] + (
                f"document {m.group(1)!r} was skipped ({err})")
            break
    return problem


def load_folder(corpus: str | Path, golden: str | Path, name: str | None = None,
                include_hidden: bool = False) -> tuple[Benchmark, list[str], list[str]]:
    """A reader's own benchmark: documents from a folder (Markdown, text, HTML, code) and
    questions whose evidence is given as quotes or as spans (JSONL or CSV).

    Returns (benchmark, file errors, question problems). Every file is loaded or listed in the
    file errors with its reason; every question is checked before anything is embedded
    (`golden.check_questions`) and anchored, or listed in the problems with the questions
    file and its line. Nothing is guessed. Raises `ragkit.evaluate.GoldenError` when the
    questions file as a whole cannot be read. ``info`` holds the files left out (``ignored_files``,
    ``skipped_files``: see `ragkit.text.Corpus`), their summary lines (``left_out``) and the
    files read (``input_files``, which no output may overwrite).
    """
    from ..text.corpus import load_corpus
    from .golden import check_questions

    corpus_dir = Path(corpus)
    loaded = load_corpus(corpus_dir, strict=False, include_hidden=include_hidden)
    records, found = check_questions(golden, loaded.by_id())
    problems = [f"{shown(golden)}:{_name_skipped(p, loaded.errors)}" for p in found]
    queries = [Query(id=r["id"], text=r["question"],
                     gold=tuple(Span(e["doc_id"], e["start"], e["end"]) for e in r["evidence"]),
                     type=r["type"], answer=r.get("answer", ""), context=r.get("context") or {},
                     metadata={"synthetic": bool(r.get("synthetic"))})
               for r in records]
    bench = Benchmark(name or corpus_dir.resolve().name, loaded.documents, queries,
                      info={"ignored_files": list(loaded.ignored),
                            "skipped_files": list(loaded.skipped),
                            "left_out": loaded.summary(),
                            "input_files": list(loaded.inputs)})
    return bench, loaded.errors, problems


LOADERS = {"course": load_course, "chroma": load_chroma, "anthropic": load_anthropic,
           "financebench": load_financebench}


def load(name: str, **kw: Any) -> Benchmark:
    if name not in LOADERS:
        raise KeyError(f"unknown benchmark {name!r}; choose from {sorted(LOADERS)}")
    return LOADERS[name](**kw)
