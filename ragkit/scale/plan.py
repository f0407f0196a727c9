"""A hundred million documents, as arithmetic from measured per-shard figures.

Nothing here runs anything: `plan` multiplies what the benches measured on one machine (chunks
per document and the encoder's chunks/s from `ragkit bench scale`; the build seconds, bytes and
query latency of one on-disk index shard from `ragkit bench ondisk`) up to a corpus size, and
says what each line assumes. It is the arithmetic a reader would do by hand, kept in one place
so the README's numbers follow the rows.

    >>> p = plan(documents=1_000, chunks_per_document=5, dim=4, shard_vectors=1_000,
    ...          shard_build_s=10.0, encode_chunks_per_s=50.0, shard_p50_ms=2.0,
    ...          shard_p95_ms=3.0, workers=5)
    >>> p.vectors, p.shards, p.vector_bytes, p.encode_hours_per_worker * 3600, p.serial_p50_ms
    (5000, 5, 120000, 20.0, 10.0)
    >>> p.build_hours_per_worker * 3600  # one whole shard each
    10.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ID_BYTES = 8       # an int64 id beside every vector in an IVF list
FLOAT_BYTES = 4    # float32


@dataclass(frozen=True)
class Plan:
    documents: int
    chunks_per_document: float
    dim: int
    shard_vectors: int
    workers: int
    vectors: int
    vector_bytes: int           # the lists: vectors + ids (centroids and metadata aside)
    shards: int
    encode_hours_per_worker: float   # every chunk through the encoder, split over the workers
    build_hours_per_worker: float    # train + add + merge of the whole shards a worker builds
    shard_p50_ms: float
    shard_p95_ms: float
    serial_p50_ms: float        # one machine searching every shard in turn

    def lines(self) -> list[str]:
        """The arithmetic as Markdown table rows (what, figure, from)."""
        gib = self.vector_bytes / 2**30
        return [
            "| what | figure | from |", "|---|---|---|",
            f"| vectors | {self.vectors:,} | {self.documents:,} documents x "
            f"{self.chunks_per_document:.2f} chunks a document (measured) |",
            f"| bytes of the lists | {gib:,.0f} GiB ({gib / 1024:,.2f} TiB) | vectors x "
            f"({self.dim} x {FLOAT_BYTES} + {ID_BYTES}) bytes, float32, IVF-Flat |",
            f"| shards | {self.shards:,} | of {self.shard_vectors:,} vectors, the on-disk shard "
            "measured here |",
            f"| encoding | {self.encode_hours_per_worker:,.0f} h on each of {self.workers:,} "
            "workers | every chunk at the measured chunks/s of one 2-CPU process |",
            f"| index build | {_duration(self.build_hours_per_worker)} on each of "
            f"{self.workers:,} workers | the measured train + add + merge of one shard x "
            "the shards each worker builds (whole shards: ceil(shards / workers)) |",
            f"| query fan-out | {self.shards:,} shards a query: {self.shard_p50_ms:,.1f} / "
            f"{self.shard_p95_ms:,.1f} ms (p50 / p95) when each shard answers on its own "
            f"machine, plus the merge of {self.shards:,} top-k lists; {self.serial_p50_ms / 1000:,.1f} s "
            "when one machine searches every shard in turn | the measured shard's latency |",
        ]


def _duration(hours: float) -> str:
    """``6.0 min`` under an hour, else ``1.5 h``.

    >>> _duration(0.1), _duration(2.25)
    ('6.0 min', '2.2 h')
    """
    return f"{hours * 60:,.1f} min" if hours < 1 else f"{hours:,.1f} h"


def plan(documents: int, chunks_per_document: float, dim: int, shard_vectors: int,
         shard_build_s: float, encode_chunks_per_s: float, shard_p50_ms: float,
         shard_p95_ms: float, workers: int) -> Plan:
    """The arithmetic of the module docstring. The fan-out latency with a machine a shard is
    at least the slowest shard's, so the shard's p95 is its floor, not a prediction."""
    if min(documents, shard_vectors, workers) < 1 or encode_chunks_per_s <= 0:
        raise ValueError("documents, shard_vectors and workers must be >= 1 and the encoder "
                         "rate above 0")
    vectors = int(round(documents * chunks_per_document))
    shards = math.ceil(vectors / shard_vectors)
    return Plan(documents=documents, chunks_per_document=chunks_per_document, dim=dim,
                shard_vectors=shard_vectors, workers=workers, vectors=vectors,
                vector_bytes=vectors * (dim * FLOAT_BYTES + ID_BYTES), shards=shards,
                encode_hours_per_worker=vectors / encode_chunks_per_s / workers / 3600,
                build_hours_per_worker=math.ceil(shards / workers) * shard_build_s / 3600,
                shard_p50_ms=shard_p50_ms, shard_p95_ms=shard_p95_ms,
                serial_p50_ms=shards * shard_p50_ms)
