"""``ragkit index``: chunk and embed a corpus into resumable shards, then build a faiss index.

    ragkit index data/corpus --out runs/my-index                         # a folder of documents
    ragkit index --hf-dataset wikitext --hf-config wikitext-2-raw-v1 --split train \\
                 --text-field text --out runs/wiki --num-proc 2           # a Hugging Face dataset
    ragkit eval --corpus data/corpus --golden data/golden/questions.jsonl --index runs/my-index

The corpus goes through `ragkit.stages` (chunk, optional structural preambles, embed) into
``OUT/shards`` (`ragkit.shards`: re-running the same command resumes after the last finished
shard), with a progress bar; then ``OUT/index.faiss`` is built from the shards
(`ragkit.index_scale`: ``--kind ivf_flat`` by default, or ``ivf_pq``, ``hnsw``).
``ragkit eval --index OUT`` embeds the golden questions with the same model, searches that
index, and scores the hits by their character spans as ``ragkit eval`` does.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Iterator

from .common import prepare


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
    from ..index_scale import ScaledIndex
    from ..shards import build_shards
    from ..stages import ChunkStage, EmbedStage

    out = Path(a.out)
    if a.hf_dataset:
        docs, total = hf_documents(a.hf_dataset, a.hf_config, a.split, a.text_field, a.id_field)
    else:
        from ..documents import load_corpus

        corpus = load_corpus(a.source, strict=False)
        for err in corpus.errors:
            print(f"skipped: {err}", file=sys.stderr)
        for line in corpus.summary():  # README, hidden/backup files, duplicates, other types
            print(line, file=sys.stderr)
        docs, total = iter(corpus.documents), len(corpus.documents)
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
    print(f"{a.kind} index of {len(index):,} vectors: {path}")
    return 0


def _hit_rows(shards: Any, rows: set[int]) -> dict[int, dict[str, Any]]:
    """The chunk rows of the given row ids, read from the shards that hold them."""
    out: dict[int, dict[str, Any]] = {}
    for entry, path in zip(shards.manifest["shards"], shards.shards):
        lo, hi = entry["first_row"], entry["first_row"] + entry["rows"]
        if not any(lo <= r < hi for r in rows):
            continue
        import pyarrow.parquet as pq

        table = pq.read_table(path, columns=["row", "chunk_id", "doc_id", "start", "end", "text",
                                             "prefix", "strategy", "metadata"]).to_pylist()
        out.update({rec["row"]: rec for rec in table if rec["row"] in rows})
    return out


def evaluate_index(bench: Any, folder: str, embedder: Any, k: int) -> dict[str, float]:
    """Mean span metrics of `bench`'s answerable questions against the index in `folder`."""
    from ..evaluate import evaluate_retrieval
    from ..index_scale import ScaledIndex
    from ..shards import ShardSet
    from ..stages import batch_to_chunks

    shards = ShardSet(Path(folder) / "shards")
    settings = [s for s in shards.manifest["settings"]["stages"] if s.get("stage") == "embed"]
    if settings and settings[0].get("fingerprint") != embedder.fingerprint:
        raise ValueError(f"{folder} was embedded with {settings[0].get('model')}, not "
                         f"{embedder.name}: pass the same --embedder")
    index = ScaledIndex.load(Path(folder) / "index.faiss", shards.folder)
    queries = [q for q in bench.queries if q.gold]
    qvecs = embedder.encode([q.text for q in queries], kind="query")
    scores, ids = index.search(qvecs, k)
    rows = _hit_rows(shards, {int(i) for i in ids.ravel() if i >= 0})
    chunks = {r: batch_to_chunks({c: [rec[c]] for c in rec})[0] for r, rec in rows.items()}
    ranked = {q.id: [(chunks[int(i)], float(s)) for i, s in zip(ids[n], scores[n]) if i >= 0]
              for n, q in enumerate(queries)}
    texts = {d.id: d.text for d in bench.documents}
    _, means = evaluate_retrieval(queries, ranked, [], k=k, omega=False, texts=texts)
    return means


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
    p.add_argument("--shard-docs", type=int, default=1000, help="documents per shard")
    p.add_argument("--num-proc", type=int, default=1, help="worker processes (datasets.map)")
    p.add_argument("--kind", choices=["ivf_flat", "ivf_pq", "hnsw"], default="ivf_flat")


def main(argv: list[str] | None = None, prog: str = "ragkit index") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    a = p.parse_args(argv)
    if not a.source and not a.hf_dataset:
        p.error("give a folder of documents or --hf-dataset NAME")
    if a.source and not Path(a.source).is_dir():
        p.error(f"{a.source}: no such folder")
    prepare()
    try:
        return build(a)
    except (ValueError, OSError) as e:
        print(f"ragkit index: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
