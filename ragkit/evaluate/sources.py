"""Where the benchmarks' public files come from, and the type they load into.

`fetch` finds one pinned file: in a local folder named by ``RAGKIT_BENCHMARKS_DIR`` (e.g.
``../shared/benchmarks``), then in ragkit's download cache, then at its public source (a pinned
commit), its checksum verified whichever way it came. `Benchmark` is documents + queries with
gold spans, whichever loader made it (`ragkit.evaluate.benchmarks`,
`ragkit.evaluate.financebench`).
"""

from __future__ import annotations

import hashlib
import json
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cache import atomic_write_bytes
from ..config import get_settings
from ..files import shown
from ..types import Chunk, Document, Query, Span

CHROMA_COMMIT = "d451fc4cf56e417b755994b4ca5212fd5057c0d2"
ANTHROPIC_COMMIT = "4b36a1e1f64361397f4cbe4fbc7cdace338f16f8"
_CHROMA_URL = (f"https://raw.githubusercontent.com/brandonstarxel/chunking_evaluation/{CHROMA_COMMIT}"
               "/chunking_evaluation/evaluation_framework/general_evaluation_data/")
_ANTHROPIC_URL = (f"https://raw.githubusercontent.com/anthropics/anthropic-cookbook/{ANTHROPIC_COMMIT}"
                  "/skills/contextual-embeddings/data/")

# relative path -> (url, sha256)
FILES: dict[str, tuple[str, str]] = {
    "chroma/corpora/chatlogs.md": (_CHROMA_URL + "corpora/chatlogs.md",
        "543a98f82b2a6a492349fd7f8c9d6c3e78d1a4af81d13c79a7fd513c3f65bda6"),
    "chroma/corpora/finance.md": (_CHROMA_URL + "corpora/finance.md",
        "1c48d0156820abc88e46e5c992fa0cd2708b07ae59a3771b2b18234b7208561f"),
    "chroma/corpora/pubmed.md": (_CHROMA_URL + "corpora/pubmed.md",
        "0fd9242ffb253695e5d0f0215cb79a66a2a8f1236591e764c60d370747684ced"),
    "chroma/corpora/state_of_the_union.md": (_CHROMA_URL + "corpora/state_of_the_union.md",
        "6fc21d560d31eb2421e337596feea0f83f1fa9ca02c6c4e47bc26959d7531b37"),
    "chroma/corpora/wikitexts.md": (_CHROMA_URL + "corpora/wikitexts.md",
        "74cafcdb771185ecb9f22cc41b73e2e44477e0636ecf9cf1f96fd6ee0f4b86c0"),
    "chroma/questions_df.csv": (_CHROMA_URL + "questions_df.csv",
        "3ab3901889b8900f43775537bf12d36bd6614255fc59124faca31bede1dda7a3"),
    "anthropic/codebase_chunks.json": (_ANTHROPIC_URL + "codebase_chunks.json",
        "70dbed1cb8a90a107b23742b1537051346860f841ec8b03734c1298fa4a34d46"),
    "anthropic/evaluation_set.jsonl": (_ANTHROPIC_URL + "evaluation_set.jsonl",
        "7186e2bed15547a2ed178134876b29e4abb206bf0394facbe61d58bf835ee073"),
}
CHROMA_CORPORA = ("chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts")


class BenchmarkUnavailable(RuntimeError):
    """A benchmark file is neither in a local folder nor downloadable."""


class ChecksumError(ValueError):
    """A benchmark file's sha256 differs from the pinned one."""


def _sha256(path: Path, kind: str = "") -> str:
    """The file's sha256, or with ``kind="git-blob:"`` its git blob id (sha1 of a header and
    the bytes), prefixed so that it compares with a pinned checksum of either kind."""
    if kind == "git-blob:":
        h = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())  # noqa: S324 - git's id
    else:
        h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return kind + h.hexdigest()


def _digest(data: bytes, kind: str = "") -> str:
    if kind == "git-blob:":
        return kind + hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()  # noqa: S324
    return hashlib.sha256(data).hexdigest()


def fetch(rel: str, folder: str | Path | None = None, allow_download: bool = True,
          pinned: tuple[str, str] | None = None) -> Path:
    """Local path of one benchmark file, verified by its checksum (see module docstring).
    `pinned` is (url, checksum) for a file `FILES` does not list; a checksum is a sha256, or
    ``git-blob:`` and the file's git blob id at the pinned commit."""
    url, sha = pinned or FILES[rel]
    kind = "git-blob:" if sha.startswith("git-blob:") else ""
    settings = get_settings()
    local = Path(folder) if folder else settings.benchmarks_dir
    if local is not None:
        path = local / rel
        if path.exists():
            got = _sha256(path, kind)
            if got != sha:
                raise ChecksumError(f"{path}: sha256 {got[:12]}… differs from the pinned "
                                    f"{sha[:12]}… (a modified or different copy)")
            return path
        if folder:
            raise BenchmarkUnavailable(f"{path} does not exist")
    cached = settings.cache_dir / "benchmarks" / rel
    if cached.exists() and _sha256(cached, kind) == sha:
        return cached
    if not allow_download:
        raise BenchmarkUnavailable(_missing(rel))
    try:
        with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 - pinned https URL
            data = r.read()
    except OSError as e:
        raise BenchmarkUnavailable(_missing(rel) + f" (download failed: {e})") from None
    got = _digest(data, kind)
    if got != sha:
        raise ChecksumError(f"{url}: downloaded sha256 {got[:12]}… differs from {sha[:12]}…")
    atomic_write_bytes(cached, data)
    return cached


def _missing(rel: str) -> str:
    local = get_settings().benchmarks_dir
    where = (f"RAGKIT_BENCHMARKS_DIR={local} has no {local / rel}; point it at a folder"
             if local is not None else "set RAGKIT_BENCHMARKS_DIR to a folder")
    return (f"benchmark file {rel} is not available: {where} holding chroma/ and anthropic/ "
            "(e.g. ../shared/benchmarks), or go online so it can be downloaded")


@dataclass
class Benchmark:
    """Documents + queries; `chunks` holds upstream's own chunks where the benchmark has them."""

    name: str
    documents: list[Document]
    queries: list[Query]
    chunks: list[Chunk] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # identical text earns the gold's credit: every benchmark finds its copies here
        from .copies import attach_copies

        self.queries = attach_copies(self.queries, self.documents)

    def docs_by_id(self) -> dict[str, Document]:
        return {d.id: d for d in self.documents}

    def subset(self, n_queries: int) -> "Benchmark":
        """An evenly spaced sample of n queries (every len/n-th one; for the smoke profile)."""
        if n_queries >= len(self.queries):
            return self
        step = len(self.queries) / n_queries
        picked = [self.queries[int(i * step)] for i in range(n_queries)]
        return Benchmark(self.name, self.documents, picked, self.chunks,
                         {**self.info, "subset": n_queries})

    def restrict(self, doc_ids, max_queries: int | None = None) -> "Benchmark":
        """Only these documents, the queries whose gold lies in them (refusals kept), and
        their upstream chunks; optionally an evenly spaced sample of `max_queries`."""
        keep = set(doc_ids)
        docs = [d for d in self.documents if d.id in keep]
        queries = [q for q in self.queries if all(g.doc_id in keep for g in q.gold)]
        out = Benchmark(self.name, docs, queries, [c for c in self.chunks if c.doc_id in keep],
                        {**self.info, "restricted_to": len(docs)})
        return out.subset(max_queries) if max_queries else out

    def head(self, chars: int) -> "Benchmark":
        """Each document cut at its last paragraph break (a blank line) before `chars`
        characters (at `chars` itself if it has none), with the questions whose gold all lies
        before the cut and the upstream chunks that end before it (offsets stay valid: every
        kept text is a prefix)."""
        from dataclasses import replace

        cut = {}
        for d in self.documents:
            end = len(d.text) if len(d.text) <= chars else d.text.rfind("\n\n", 0, chars)
            cut[d.id] = end if end > 0 else min(chars, len(d.text))
        docs = [replace(d, text=d.text[:cut[d.id]]) for d in self.documents]
        queries = [q for q in self.queries if all(g.end <= cut[g.doc_id] for g in q.gold)]
        chunks = [c for c in self.chunks if c.end <= cut[c.doc_id]]
        return Benchmark(self.name, docs, queries, chunks, {**self.info, "head_chars": chars})

    def for_profile(self, profile: str | None = None) -> "Benchmark":
        """The benchmark itself in the full profile; a small, fixed slice in the smoke one."""
        profile = profile or get_settings().profile
        if profile != "smoke":
            return self
        if self.name == "chroma":  # two corpora (so a corpus filter has work), each cut at
            # its last blank line before 20k chars: 10.5k + 19.9k chars, 24 questions
            return self.restrict(["chatlogs", "state_of_the_union"]).head(20_000).subset(24)
        if self.name == "financebench":  # the two shortest filings that have questions
            asked = {g.doc_id for q in self.queries for g in q.gold}
            docs = sorted((d for d in self.documents if d.id in asked), key=lambda d: len(d.text))
            return self.restrict([d.id for d in docs[:2]])
        if self.info.get("smoke_docs"):  # the course: the documents of the staged failures
            return self.restrict(self.info["smoke_docs"])  # all their questions: cheap
        ids = [d.id for d in self.documents]
        return self.restrict(ids[:: max(1, len(ids) // 9)], 24)  # anthropic: 9 files, 32k chars

    def to_datasets(self):
        """(documents, questions) as Hugging Face `datasets.Dataset` objects."""
        from datasets import Dataset

        docs = Dataset.from_list([{"doc_id": d.id, "text": d.text,
                                   "metadata": json.dumps(dict(d.metadata), sort_keys=True)}
                                  for d in self.documents])
        qs = Dataset.from_list([{
            "query_id": q.id, "question": q.text, "type": q.type, "answer": q.answer,
            "gold": [{"doc_id": g.doc_id, "start": g.start, "end": g.end} for g in q.gold],
            "context": json.dumps(dict(q.context), sort_keys=True)} for q in self.queries])
        return docs, qs


