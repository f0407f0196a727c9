"""The course map: the pipeline's stages, the ragkit module that does each one, and the
notebooks that change it. Notebook 00 draws it (`ragkit.report.pipeline_diagram`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stage:
    name: str          # what comes out of this stage
    module: str        # the ragkit module that makes it
    notebooks: tuple[str, ...]  # the notebooks that change this stage
    change: str        # what they change, in a few words


STAGES: tuple[Stage, ...] = (
    Stage("documents", "ragkit.text.documents", ("03", "08", "10"),
          "metadata (03), your own files (08), PDFs with tables and pages (10)"),
    Stage("blocks", "ragkit.text.markdown", ("02",),
          "headings, tables, lists parsed with offsets (02)"),
    Stage("chunks", "ragkit.chunkers", ("01", "02", "06"),
          "fixed windows (01), structure (02), parents and children (06)"),
    Stage("prefixes", "ragkit.contextualize", ("02", "04"),
          "breadcrumbs (02), generated preambles (04)"),
    Stage("vectors", "ragkit.embed", ("00", "05"),
          "the encoder (00), late chunking (05)"),
    Stage("index", "ragkit.retrieve.index", ("03", "09"),
          "metadata filters before search (03), approximate indexes at scale (09)"),
    Stage("retrieval", "ragkit.retrieve", ("04", "06", "07"),
          "contextual BM25 (04), small-to-big (06), the stack: BM25 over identifier words, "
          "windows, cross-encoder (07)"),
    Stage("evaluation", "ragkit.evaluate", ("00", "01", "07"),
          "span metrics at k and at a token budget (00), on public benchmarks (01), "
          "one factor at a time with intervals (07)"),
)
