"""``ragkit index``: chunk and embed a corpus into resumable shards, then build a faiss index.

    ragkit index data/corpus --out runs/my-index                         # a folder of documents
    ragkit index --hf-dataset wikitext --hf-config wikitext-2-raw-v1 --split train \\
                 --text-field text --out runs/wiki --num-proc 2           # a Hugging Face dataset
    ragkit eval --corpus data/corpus --golden data/golden/questions.jsonl --index runs/my-index

The corpus goes through `ragkit.scale.stages` (chunk, optional structural preambles, embed) into
``OUT/shards`` (`ragkit.scale.shards`: re-running the same command resumes after the last finished
shard), with a progress bar; then ``OUT/index.faiss`` is built from the shards
(`ragkit.scale.index`: ``--kind ivf_flat`` by default, or ``ivf_pq``, ``hnsw``).
``ragkit eval --index OUT`` embeds the golden questions with the same model, searches that
index, and scores the hits exactly as ``ragkit eval`` scores a strategy: the index is a
retriever (`IndexRetriever`) handed to `ragkit.experiments.run_experiment`, which searches deep
enough for nDCG@10 and to fill the largest context budget (`search_deep`), and reports the
fixed-k metrics and the budgeted ones (recall@B, pass@B, IoU@B ... at `ragkit.evaluate.BUDGETS`).

``OUT/corpus.json`` records what the index was built from (each document's id and the sha256 of
its text, and the chunker): ``ragkit eval --index`` refuses a corpus whose documents differ from
it, naming the documents changed since or missing from the index (an index built before the
fingerprint is checked by its chunks' text at their spans). ``--out`` is a new or empty folder,
or one ``ragkit index`` made (its ``.ragkit-index`` marker; it resumes there), never a folder of
the reader's (`ragkit.tools.outputs.check_folder`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..retrieve.base import Retriever
from .common import Parser, bounded, prepare


def hf_documents(name: str, config: str | None, split: str, text_field: str,
                 id_field: str | None) -> tuple[Iterator[Any], int]:
    """Documents from a Hugging Face dataset (a local folder or the local cache: offline)."""
    import datasets

    from ..types import Document

    ds = datasets.load_dataset(name, config, split=split)
    if text_field not in ds.column_names:
        raise ValueError(f"{name}: no column {text_field!r} (columns: "
                         f"{', '.join(ds.column_names)})")

    def docs() -> Iterator[Document]:
        for i, row in enumerate(ds):
            text = row[text_field]
            if not isinstance(text, str) or not text.strip():
                continue
            meta = {k: v for k, v in row.items() if k not in (text_field, id_field)
                    and isinstance(v, (str, int, float, bool))}
            yield Document(str(row[id_field]) if id_field else f"{name}:{split}:{i}", text, meta)
    return docs(), len(ds)


def build(a: argparse.Namespace) -> int:
    from ..scale.index import ScaledIndex
    from ..scale.shards import build_shards
    from ..scale.stages import ChunkStage, EmbedStage
    from .outputs import mark_folder

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    mark_folder(out, "index")  # first: a run stopped half-way may be resumed
    fingerprint = CorpusFingerprint(a.strategy)
    if a.hf_dataset:
        docs, total = hf_documents(a.hf_dataset, a.hf_config, a.split, a.text_field, a.id_field)
    else:
        from ..text.corpus import load_corpus

        corpus = load_corpus(a.source, strict=False)
        for err in corpus.errors:
            print(f"skipped: {err}", file=sys.stderr)
        for line in corpus.summary():  # README, hidden/backup files, duplicates, other types
            print(line, file=sys.stderr)
        docs, total = iter(corpus.documents), len(corpus.documents)
    docs = fingerprint.watch(docs)
    stages = [ChunkStage(a.strategy, context=a.context), EmbedStage(a.embedder)]
    shards = build_shards(docs, out / "shards", stages, shard_docs=a.shard_docs,
                          num_proc=a.num_proc, total_docs=total, progress=True)
    s = shards.stats()
    print(f"{s['documents']:,} documents -> {s['chunks']:,} chunks in {s['shards']} shards "
          f"({out / 'shards'})")
    truncated = sum(shards.column("truncated"))
    if truncated:
        print(f"warning: {truncated} chunks exceed the encoder's limit and were truncated "
              "(their rows say truncated=true)", file=sys.stderr)
    index = ScaledIndex.from_shards(out / "shards", kind=a.kind, metadata=False, progress=True)
    path = index.save(out / "index")
    fingerprint.save(out)
    print(f"{a.kind} index of {len(index):,} vectors: {path}")
    return 0


FINGERPRINT = "corpus.json"  # in OUT: the documents (id -> text hash) and chunker it holds
NAMES_SHOWN = 8


class CorpusFingerprint:
    """What an index was built from: each document's id and the sha256 of its text, and the
    chunker. `watch` records the documents as they pass to the shards; `save` writes
    ``OUT/corpus.json``; `check_corpus` compares a corpus with it."""

    def __init__(self, strategy: str):
        self.strategy = strategy
        self.documents: dict[str, str] = {}

    def watch(self, docs: Iterator[Any]) -> Iterator[Any]:
        from ..types import text_hash

        for doc in docs:
            self.documents[doc.id] = text_hash(doc.text)
            yield doc

    def save(self, out: Path) -> None:
        import json

        from ..files import write_whole

        write_whole(out / FINGERPRINT, json.dumps(
            {"strategy": self.strategy, "documents": self.documents}, indent=1,
            sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def _names(ids: list[str]) -> str:
    from ..files import shown

    return ", ".join(shown(i) for i in ids[:NAMES_SHOWN]) + (
        f", ... and {len(ids) - NAMES_SHOWN} more" if len(ids) > NAMES_SHOWN else "")


def check_corpus(folder: str | Path, documents: Sequence[Any]) -> None:
    """`ValueError` naming the documents of `documents` that differ from those the index in
    `folder` was built from (``corpus.json``: a changed text, a document not in it); an index
    built before fingerprints is checked by `check_spans` instead."""
    from .. import jsonio
    from ..types import text_hash

    path = Path(folder) / FINGERPRINT
    if not path.is_file():
        return
    try:
        built = jsonio.loads(path.read_text(encoding="utf-8"))["documents"]
        assert isinstance(built, dict)
    except (ValueError, KeyError, TypeError, AssertionError, OSError) as e:
        raise ValueError(f"{path}: not a corpus fingerprint ragkit can read ({e}); rebuild "
                         "the index with `ragkit index`") from None
    if not any(d.id in built for d in documents):
        return  # none of them: `evaluate_index` says so
    changed = [d.id for d in documents if d.id in built and built[d.id] != text_hash(d.text)]
    new = [d.id for d in documents if d.id not in built]
    if changed or new:
        parts = ([f"{len(changed)} document(s) changed since it was built ({_names(changed)})"]
                 if changed else []) + ([f"{len(new)} not in it ({_names(new)})"] if new else [])
        raise ValueError(f"was built from another version of this corpus: {'; '.join(parts)}; "
                         "rebuild it with `ragkit index`, or evaluate with --strategies")


def check_spans(documents: Sequence[Any], chunks: Sequence[Any]) -> None:
    """`ValueError` naming the documents whose text no longer holds their chunks' text at the
    chunks' spans (an index built before fingerprints, from another version of a document)."""
    by_id = {d.id: d for d in documents}
    changed = sorted({c.doc_id for c in chunks
                      if by_id[c.doc_id].text[c.start:c.end] != c.text})
    if changed:
        raise ValueError(f"was built from another version of this corpus: {len(changed)} "
                         f"document(s) changed since it was built ({_names(changed)}); "
                         "rebuild it with `ragkit index`, or evaluate with --strategies")


CHUNK_READ = ("row", "chunk_id", "doc_id", "start", "end", "text", "prefix", "strategy",
              "metadata")


class IndexRetriever(Retriever):
    """A built index folder (``OUT`` of ``ragkit index``) as a `ragkit.retrieve.Retriever`:
    queries embedded with `embedder` (which must be the one the shards were embedded with),
    the faiss index searched (``nprobe`` IVF cells; default the index's own), each hit's chunk
    read back from the shard that holds it. Ties break toward the newer document, as
    `DenseRetriever`'s do."""

    kind = "index"

    def __init__(self, folder: str | Path, embedder: Any, nprobe: int | None = None):
        from ..scale.index import ScaledIndex
        from ..scale.shards import ShardSet

        self.folder = Path(folder)
        self.shards = ShardSet(self.folder / "shards")
        settings = [s for s in self.shards.manifest["settings"]["stages"]
                    if s.get("stage") == "embed"]
        if settings and settings[0].get("fingerprint") != embedder.fingerprint:
            built = settings[0].get("model")
            if built == embedder.name:  # same name, other files (or an older fingerprint)
                raise ValueError(f"{folder} was embedded with another copy of {built} (model "
                                 f"fingerprint {settings[0].get('fingerprint')}, now "
                                 f"{embedder.fingerprint}): rebuild it with `ragkit index`")
            raise ValueError(f"{folder} was embedded with {built}, not "
                             f"{embedder.name}: pass the same --embedder")
        self.index = ScaledIndex.load(self.folder / "index.faiss", self.shards.folder)
        self.embedder, self.nprobe = embedder, nprobe
        self._qvecs: dict[str, Any] = {}
        self._chunks: dict[int, Any] = {}
        self._flags: list[str] = []

    @property
    def flags(self) -> list[str]:
        return list(self._flags)

    def describe(self) -> str:
        return (f"index {self.folder}: faiss {self.index.kind} over {len(self.index)} chunk "
                f"vectors ({self.embedder.name}), nprobe {self.nprobe or 'the index default'}")

    def chunks_of(self, doc_ids: set[str]) -> list[Any]:
        """Every chunk of the given documents in the index (a column filter per shard), in row
        order; the encoder's truncations among them become this retriever's flags."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from ..scale.batches import batch_to_chunks

        wanted = pa.array(sorted(doc_ids), pa.string())
        out, truncated = [], 0
        for table in self.shards.tables([*CHUNK_READ, "truncated"]):
            table = table.filter(pc.is_in(table.column("doc_id"), value_set=wanted))
            if not table.num_rows:
                continue
            cols = table.to_pydict()
            chunks = batch_to_chunks(cols)
            self._chunks.update(zip(cols["row"], chunks))
            truncated += sum(cols["truncated"])
            out += chunks
        self._flags = [f"truncated:{truncated}"] if truncated else []
        return out

    def _rows(self, rows: set[int]) -> None:
        """Read the chunks of `rows` not read yet, from the shards whose range holds them."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        from ..scale.batches import batch_to_chunks

        need = np.array(sorted(r for r in rows if r not in self._chunks), np.int64)
        for k, entry in enumerate(self.shards.manifest["shards"]):
            lo, hi = entry["first_row"], entry["first_row"] + entry["rows"]
            here = need[(need >= lo) & (need < hi)]
            if not len(here):
                continue
            table = self.shards.table(k, CHUNK_READ)
            table = table.filter(pc.is_in(table.column("row"), value_set=pa.array(here)))
            cols = table.to_pydict()
            self._chunks.update(zip(cols["row"], batch_to_chunks(cols)))

    def search(self, queries: Sequence[str], k: int, where: Any = None) -> list[list[Any]]:
        import numpy as np

        from ..retrieve.retrievers import Hit, _per_query, newest_first

        queries = list(queries)
        new = [q for q in dict.fromkeys(queries) if q not in self._qvecs]
        if new:  # a deeper search asks again: each question is embedded once
            self._qvecs.update(zip(new, self.embedder.encode(new, kind="query")))
        qv = np.stack([self._qvecs[q] for q in queries]) if queries else np.zeros((0, 1))
        wheres = _per_query(where, len(queries))
        out: list[list[Any]] = [[] for _ in queries]
        groups: dict[str, list[int]] = {}
        for i, w in enumerate(wheres):  # batch the queries that share a filter
            groups.setdefault(repr(w) if not callable(w) else str(id(w)), []).append(i)
        for idx in groups.values():
            scores, ids = self.index.search(qv[idx], k, where=wheres[idx[0]], nprobe=self.nprobe)
            self._rows({int(r) for r in ids.ravel() if r >= 0})
            for row, i in enumerate(idx):
                out[i] = newest_first([Hit(self._chunks[int(r)], float(sc))
                                       for r, sc in zip(ids[row], scores[row]) if r >= 0])
        return out


def evaluate_index(bench: Any, folder: str, embedder: Any, k: int,
                   nprobe: int | None = None) -> Any:
    """`bench`'s questions against the index in `folder`, scored as ``ragkit eval`` scores a
    strategy (`run_experiment` with an `IndexRetriever`): an `Outcome` with fixed-k and
    budgeted means. The evaluated chunks (precision_omega, relevance judgements) are the
    index's chunks of `bench`'s documents."""
    from ..experiments.pipeline import run_experiment

    retriever = IndexRetriever(folder, embedder, nprobe)
    check_corpus(folder, bench.documents)
    chunks = retriever.chunks_of({d.id for d in bench.documents})
    if not chunks:
        raise ValueError(f"{folder} holds none of the {len(bench.documents)} documents of "
                         "this corpus: build the index from the same documents")
    check_spans(bench.documents, chunks)
    return run_experiment(bench, chunks=chunks, retriever=retriever, k=k,
                          label=f"index:{Path(folder).name}")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", nargs="?", help="a folder of documents (or --hf-dataset)")
    p.add_argument("--out", required=True, help="folder for shards/ and index.faiss")
    p.add_argument("--hf-dataset", help="a Hugging Face dataset name or local folder")
    p.add_argument("--hf-config", default=None, help="its configuration, if any")
    p.add_argument("--split", default="train")
    p.add_argument("--text-field", default="text")
    p.add_argument("--id-field", default=None, help="default: NAME:SPLIT:ROW")
    p.add_argument("--strategy", default="recursive:250/0", help="chunker spec")
    p.add_argument("--context", choices=["structural", "extractive"], default=None,
                   help="add preambles (generators that need no model)")
    p.add_argument("--embedder", default=None, help="sentence-transformers folder or hub id")
    p.add_argument("--shard-docs", type=bounded(1, 1_000_000), default=1000,
                   help="documents per shard")
    p.add_argument("--num-proc", type=bounded(1, 256), default=1,
                   help="worker processes (datasets.map)")
    p.add_argument("--kind", choices=["ivf_flat", "ivf_pq", "hnsw"], default="ivf_flat")


def _built_before(out: Path) -> tuple[str, ...]:
    """("shards",) when `out` holds the shards of an index built before the marker file."""
    from ..scale.shards import MANIFEST

    return ("shards",) if (out / "shards" / MANIFEST).is_file() else ()


def main(argv: list[str] | None = None, prog: str = "ragkit index") -> int:
    p = Parser(prog=prog, description=__doc__,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    a = p.parse_args(argv)
    if not a.source and not a.hf_dataset:
        p.error("give a folder of documents or --hf-dataset NAME")
    if a.source and not Path(a.source).is_dir():
        p.error(f"{a.source}: no such folder")
    from .outputs import OutputError, check_folder

    try:  # new, empty, or an index folder (resumed): never a folder of the reader's
        check_folder(a.out, "--out", "index", also=_built_before(Path(a.out)))
    except OutputError as e:
        p.error(str(e))
    prepare()
    try:
        return build(a)
    except (ValueError, OSError) as e:
        print(f"ragkit index: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
