"""Extractive preambles: the document's sentences closest to the chunk (embedder cosine)."""

from __future__ import annotations

import re
import warnings
from typing import Any, Sequence

import numpy as np

from ..text.sentences import line_cuts, pieces, sentence_spans
from ..types import Chunk, Document
from .base import Contextualizer, Preamble, _clean


def candidate_sentences(text: str, min_words: int = 3) -> list[tuple[int, int]]:
    """The extractive generator's candidates: the sentences of each line (the package's one
    splitter, `ragkit.text.sentences`), those under `min_words` words dropped.

    >>> t = "One two three. Four five six, e.g. this.\\nx\\nSeven eight nine"
    >>> [t[s:e] for s, e in candidate_sentences(t)]
    ['One two three.', 'Four five six, e.g. this.', 'Seven eight nine']
    """
    return [(s, e) for ls, le in pieces(text, 0, len(text), line_cuts(text, 0, len(text)))
            for s, e in sentence_spans(text, ls, le)
            if len(re.findall(r"\w+", text[s:e])) >= min_words]


class ExtractiveContextualizer(Contextualizer):
    """The document's sentences outside the chunk that are closest to it (cosine), in document
    order, joined with `` … ``, as many as fit the budget. Sentences whose text also occurs in
    the chunk (repeated boilerplate) are skipped, so the preamble never restates the chunk."""

    name = "extractive"
    template_version = "e2"  # e2: candidates from the shared sentence splitter

    def __init__(self, budget: int = 100, budget_tokenizer: str = "minilm", embedder=None,
                 max_candidates: int = 40):
        super().__init__(budget, budget_tokenizer)
        if embedder is None:
            from ..embed.encoders import Embedder

            embedder = Embedder(show_progress=False)
        self.embedder = embedder
        self.model = embedder.name
        self.max_candidates = max_candidates
        self._doc: tuple[str, list[tuple[int, int]], np.ndarray] | None = None
        self._chunk_vecs: dict[str, np.ndarray] = {}

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "fingerprint": self.embedder.fingerprint,
                "max_candidates": self.max_candidates}

    def _encode(self, texts: list[str]) -> np.ndarray:
        from ..embed.encoders import TruncationWarning

        with warnings.catch_warnings():  # long code chunks: similarity on the first 256 tokens
            warnings.simplefilter("ignore", TruncationWarning)
            return self.embedder.encode(texts, "document")

    def prepare(self, doc: Document, chunks: Sequence[Chunk]) -> None:
        spans = candidate_sentences(doc.text)
        texts = [doc.text[s:e] for s, e in spans] + [c.text for c in chunks]
        vecs = self._encode(texts) if texts else np.zeros((0, 1), np.float32)
        self._doc = (doc.id + doc.hash, spans, vecs[:len(spans)])
        self._chunk_vecs = {c.id: v for c, v in zip(chunks, vecs[len(spans):])}

    def generate(self, doc: Document, chunk: Chunk) -> Preamble:
        if self._doc is None or self._doc[0] != doc.id + doc.hash:
            self.prepare(doc, [chunk])
        _, spans, svecs = self._doc  # type: ignore[misc]
        cvec = self._chunk_vecs.get(chunk.id)
        if cvec is None:
            cvec = self._encode([chunk.text])[0]
        body = _clean(chunk.text)
        cand = [i for i, (s, e) in enumerate(spans)
                if (e <= chunk.start or s >= chunk.end) and _clean(doc.text[s:e]) not in body]
        if not cand:
            return Preamble("", ("empty",), ())
        sims = svecs[cand] @ cvec
        order = [cand[j] for j in np.lexsort((np.arange(len(cand)), -sims))][: self.max_candidates]
        picked: list[int] = []
        for i in order:
            trial = sorted(picked + [i])
            if self.count(" … ".join(_clean(doc.text[slice(*spans[j])]) for j in trial)) \
                    <= self.budget:
                picked = trial
        text = " … ".join(_clean(doc.text[slice(*spans[j])]) for j in picked)
        return Preamble(text, () if picked else ("empty",), tuple(spans[j] for j in picked))
