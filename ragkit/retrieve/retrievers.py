"""Retrievers: dense (embedder + faiss), BM25 (bm25s), TF-IDF and the fusion of dense and BM25,
each a `ragkit.retrieve.base.Retriever` (re-exported here).

All return, per query, a ranked list of `Hit(chunk, score)`. Filters (`where`) are applied
before the search on both sides, so every retriever returns k hits when k chunks pass. Every
retriever breaks exact score ties the same way, toward the document with the newer
``effective_date`` (`newest_first`, `newer_first`; fusion too), so the 2024 fee schedule
outranks the 2021 one it repeats word for word.

    >>> r = DenseRetriever(chunks, Embedder())                                # doctest: +SKIP
    >>> r.search(["How long is the Gold refund window?"], k=5)[0][0].chunk.text  # doctest: +SKIP
"""

from __future__ import annotations

import re
import warnings
from typing import Callable, Literal, Sequence

import numpy as np

from ..types import Chunk, effective_date
from .base import Hit, Retriever
from .index import VectorIndex, Where, matches


def _meta(c: Chunk) -> dict:
    return {**c.metadata, "doc_id": c.doc_id}


def _joined(placement: str) -> str:
    """How the embedded text of a chunk is put together, in words."""
    return "prefix + body" if placement == "before" else "body + prefix"


def _name(model) -> str:
    return str(getattr(model, "name", type(model).__name__))


def described(retriever) -> str:
    """`retriever.describe()`, or its class name for one without it (a stand-in)."""
    describe = getattr(retriever, "describe", None)
    return describe() if callable(describe) else type(retriever).__name__


def _per_query(where: Where | Sequence[Where], n: int) -> list[Where]:
    if isinstance(where, (list, tuple)):
        if len(where) != n:
            raise ValueError(f"{len(where)} filters for {n} queries")
        return list(where)
    return [where] * n


class DenseRetriever(Retriever):
    """Embeds every chunk (prefix + body) once and searches by cosine similarity.

    `long` says what happens to a chunk longer than the encoder's input: ``"truncate"`` (the
    encoder reads its first tokens only; counted in ``flags`` as ``truncated:N``) or
    ``"windows"`` (`encoder_windows`: it is embedded as several windows of whole lines, each
    with the chunk's prefix and within the limit, and scores as its best window; counted as
    ``windows:N/M``). Chunks that fit are embedded exactly as with ``"truncate"``.

    Subclasses that make the chunk vectors another way (late chunking) override
    `embed_chunks`; the index, the search and the flags stay this class's.
    """

    kind = "dense"

    def __init__(self, chunks: Sequence[Chunk], embedder, placement: Literal["before", "after"]
                 = "before", use_gpu: bool | None = None,
                 long: Literal["truncate", "windows"] = "truncate"):
        if long not in ("truncate", "windows"):
            raise ValueError(f"long must be 'truncate' or 'windows', not {long!r}")
        self.chunks = list(chunks)
        self.embedder = embedder
        self.placement = placement
        self.long = long
        self.owner: np.ndarray | None = None  # vector -> chunk position, when windowed
        vecs, self._flags = self.embed_chunks()
        owner = self.owner if self.owner is not None else np.arange(len(self.chunks))
        self.index = VectorIndex(vecs, [_meta(self.chunks[j]) for j in owner], use_gpu=use_gpu)

    def embed_chunks(self) -> tuple[np.ndarray, list[str]]:
        """One vector per chunk of `self.chunks` (prefix + body, as `self.placement` puts
        them), and the encoder's flags (e.g. ["truncated:73"]: chunks it cut short); with
        ``long="windows"`` one per window, `self.owner` naming each window's chunk."""
        if self.long == "windows":
            apart: list[int] = []
            texts, owner = encoder_windows(self.chunks, self.embedder, self.placement, apart)
            if apart:
                warnings.warn(f"{len(apart)} of {len(self.chunks)} chunks have a prefix that "
                              f"leaves under an eighth of {self.embedder.name}'s "
                              f"{self.embedder.max_tokens} tokens for the body: each is read "
                              "as windows of its prefix and windows of its body, apart",
                              stacklevel=3)
            self.owner = np.asarray(owner, dtype=np.int64)
            vecs = self.embedder.encode(texts, "document")
            several = int((np.bincount(self.owner, minlength=len(self.chunks)) > 1).sum())
            return vecs, [*self.embedder.flags,
                          *([f"windows:{several}/{len(self.chunks)}"] if several else []),
                          *([f"prefix_apart:{len(apart)}"] if apart else [])]
        vecs = self.embedder.encode([c.embedding_text(self.placement) for c in self.chunks],
                                    "document")
        return vecs, list(self.embedder.flags)

    @property
    def flags(self) -> list[str]:
        return list(self._flags)

    def describe(self) -> str:
        long = ", longer ones as windows" if self.long == "windows" else ""
        return (f"dense: {_name(self.embedder)} cosine over {len(self.chunks)} chunks "
                f"({_joined(self.placement)}{long})")

    def search(self, queries: Sequence[str], k: int, where: Where | Sequence[Where] = None
               ) -> list[list[Hit]]:
        qv = self.embedder.encode(list(queries), "query")
        wheres = _per_query(where, len(queries))
        out: list[list[Hit]] = [[] for _ in queries]
        groups: dict[str, list[int]] = {}
        # windowed: the top k + (windows - chunks) vectors always hold k distinct chunks
        extra = 0 if self.owner is None else len(self.owner) - len(self.chunks)
        for i, w in enumerate(wheres):  # batch the queries that share a filter
            groups.setdefault(repr(w) if not callable(w) else str(id(w)), []).append(i)
        for idx in groups.values():
            scores, ids = self.index.search(qv[idx], k + extra, where=wheres[idx[0]])
            for row, i in enumerate(idx):
                best: dict[int, float] = {}
                for sc, j in zip(scores[row], ids[row]):
                    if j >= 0:
                        best.setdefault(int(j if self.owner is None else self.owner[j]),
                                        float(sc))
                hits = [Hit(self.chunks[j], sc) for j, sc in list(best.items())[:k]]
                out[i] = newest_first(hits)
        return out


def encoder_windows(chunks: Sequence[Chunk], embedder, placement: Literal["before", "after"]
                    = "before", apart: list[int] | None = None) -> tuple[list[str], list[int]]:
    """What the encoder reads of each chunk, within its input limit (`embedder.max_tokens`,
    counted with its own tokenizer, prompt and special tokens included): the chunk's
    embedding text when it fits; else windows of its body, each with the prefix, cut where
    a line starts (when one lies in the window's second half) or else between tokens.
    Every character of the body is in exactly one window. A prefix that leaves less than an
    eighth of the input for the body (a long LLM preamble) is read apart instead: windows of
    the prefix alone, then of the body alone, so nothing is cut; such chunks' positions are
    appended to `apart`. Returns the texts and, for each, the position of its chunk.

    >>> from ragkit.types import Document
    >>> class Words:  # a stand-in encoder: one token per word, plus [CLS] and [SEP]
    ...     max_tokens = 6
    ...     def count_tokens(self, texts, kind="document"):
    ...         return [len(t.split()) + 2 for t in texts]
    ...     def tokenizer(self, text, **kw):
    ...         import re
    ...         return {"offset_mapping": [m.span() for m in re.finditer(r"\\S+", text)]}
    >>> doc = Document("d", "a b\\nc d\\ne f g h\\ni")
    >>> encoder_windows([Chunk.make(doc, 0, len(doc.text), strategy="x", prefix="P")], Words())
    (['P\\n\\na b\\n', 'P\\n\\nc d\\n', 'P\\n\\ne f g ', 'P\\n\\nh\\ni'], [0, 0, 0, 0])
    >>> far = []
    >>> encoder_windows([Chunk.make(doc, 0, 7, strategy="x", prefix="P Q R S")], Words(),
    ...                 apart=far), far
    ((['P Q R S', 'a b\\nc d'], [0, 0]), [0])
    """
    cap = int(embedder.max_tokens)
    full = [c.embedding_text(placement) for c in chunks]
    counts = embedder.count_tokens(full, "document")
    texts: list[str] = []
    owner: list[int] = []

    def wrap(c: Chunk, body: str) -> str:
        return Chunk.joined(c.prefix, body, placement)

    def cut(pos: int, text: str, dress: Callable[[str], str], room: int) -> None:
        """Windows of `text`, each `dress`ed (with the prefix, or not), within `cap`."""
        spans = [tuple(o) for o in embedder.tokenizer(text, add_special_tokens=False,
                                                      return_offsets_mapping=True,
                                                      verbose=False)  # long on purpose
                 ["offset_mapping"] if o[1] > o[0]]
        i, at, first = 0, 0, len(texts)
        while at < len(text):
            take = room
            while True:
                j = min(len(spans), i + take)
                end = len(text) if j >= len(spans) else spans[j][0]
                if j < len(spans):
                    nl = text.rfind("\n", at, end)
                    if nl + 1 > at + (end - at) // 2:
                        end = nl + 1
                piece = text[at:end]
                if embedder.count_tokens([dress(piece)], "document")[0] <= cap or take <= 1:
                    break
                take = max(1, take - max(1, take // 8))
            if not piece.strip() and len(texts) > first:  # trailing whitespace only
                break
            texts.append(dress(piece))
            owner.append(pos)
            at = end
            while i < len(spans) and spans[i][0] < at:
                i += 1

    for pos, (c, text, n) in enumerate(zip(chunks, full, counts)):
        if n <= cap:
            texts.append(text)
            owner.append(pos)
            continue
        overhead = embedder.count_tokens([wrap(c, "")], "document")[0]
        if cap - overhead >= max(1, cap // 8):
            cut(pos, c.text, lambda piece, c=c: wrap(c, piece), cap - overhead)
            continue
        bare = embedder.count_tokens([""], "document")[0]  # prompt and special tokens
        if apart is not None:
            apart.append(pos)
        for part in (c.prefix, c.text) if placement == "before" else (c.text, c.prefix):
            cut(pos, part, lambda piece: piece, cap - bare)
    return texts, owner


_WORD = re.compile(r"\w+")
# the words of an ASCII camelCase identifier: runs of capitals before a capitalised word
# (HTTP|Server), capitalised or lower-case words, digit runs
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def _parts(word: str) -> list[str]:
    """The words of an identifier: split at underscores, then ASCII pieces at case changes."""
    out: list[str] = []
    for seg in word.split("_"):
        out += _CAMEL.findall(seg) if seg.isascii() else [seg] if seg else []
    return out


def identifier_words(text: str, stopwords: frozenset[str] = frozenset()) -> list[str]:
    """Keyword-search tokens that see inside identifiers: every word of two or more
    characters, lower-cased, and, for an identifier made of several words (``snake_case``,
    ``camelCase``, ``HTTPServer2``), each of its words as well. A question that says
    "the dispatch function" then matches ``dispatch_event``, and one that names
    ``DiffExecutor`` matches it whole and as "diff executor". Words in `stopwords` are left
    out; prose comes out as ``bm25s``' own tokenizer gives it.

    >>> words = identifier_words("How does parseHTTPHeader use max_retries in HTTPServer2?")
    >>> words[:9]
    ['how', 'does', 'parsehttpheader', 'parse', 'http', 'header', 'use', 'max_retries', 'max']
    >>> words[9:]
    ['retries', 'in', 'httpserver2', 'http', 'server']
    >>> identifier_words("Die Größe der Datei: größe_max", frozenset({"der"}))
    ['die', 'größe', 'datei', 'größe_max', 'größe', 'max']
    """
    out = []
    for m in _WORD.finditer(text):
        word = m.group(0)
        low = word.lower()
        if len(low) > 1 and low not in stopwords:
            out.append(low)
        parts = _parts(word)
        if len(parts) > 1:
            out += [p.lower() for p in parts if len(p) > 1 and p.lower() not in stopwords]
    return out


class BM25Retriever(Retriever):
    """bm25s over prefix + body (so a contextual preamble is searchable too).

    `tokens`: ``"words"`` (bm25s' tokenizer: lower-cased words of two or more characters) or
    ``"identifiers"`` (`identifier_words`: also the words inside ``snake_case`` and
    ``camelCase`` identifiers, for source code); `stopwords` as bm25s names them (``"en"``)
    or None."""

    kind = "bm25"

    def __init__(self, chunks: Sequence[Chunk], placement: Literal["before", "after"] = "before",
                 stopwords: str | None = "en",
                 tokens: Literal["words", "identifiers"] = "words"):
        import bm25s

        if tokens not in ("words", "identifiers"):
            raise ValueError(f"tokens must be 'words' or 'identifiers', not {tokens!r}")
        self.chunks = list(chunks)
        self._stop, self._placement = stopwords, placement
        self.tokens = tokens
        self._stopset = frozenset(bm25s.stopwords.STOPWORDS_EN) if stopwords == "en" \
            else frozenset()
        if tokens == "identifiers" and stopwords not in (None, "en"):
            raise ValueError("identifier tokens know the stopwords 'en' or None, not "
                             f"{stopwords!r}")
        corpus = [c.embedding_text(placement) for c in self.chunks]
        self._bm25 = bm25s.BM25()
        if tokens == "words":
            self._bm25.index(bm25s.tokenize(corpus, stopwords=stopwords, show_progress=False),
                             show_progress=False)
        else:
            self._bm25.index([identifier_words(t, self._stopset) or [""] for t in corpus],
                             show_progress=False)
        self._metas = [_meta(c) for c in self.chunks]

    @property
    def flags(self) -> list[str]:
        return []

    def describe(self) -> str:
        return (f"BM25 over {len(self.chunks)} chunks ({_joined(self._placement)}; "
                f"{self.tokens}, stopwords {self._stop or 'none'})")

    def scores(self, query: str) -> np.ndarray:
        import bm25s

        if self.tokens == "identifiers":
            vocab = self._bm25.vocab_dict
            toks = [t for t in identifier_words(query, self._stopset) if t in vocab]
            if not toks:
                return np.zeros(len(self.chunks), dtype=np.float64)
        else:
            toks = bm25s.tokenize([query], stopwords=self._stop, show_progress=False,
                                  return_ids=False)[0]
        return np.asarray(self._bm25.get_scores(toks), dtype=np.float64)

    def search(self, queries: Sequence[str], k: int, where: Where | Sequence[Where] = None
               ) -> list[list[Hit]]:
        out = []
        for q, w in zip(queries, _per_query(where, len(queries))):
            s = self.scores(q)
            allowed = np.array([matches(m, w) for m in self._metas], dtype=bool)
            s = np.where(allowed, s, -np.inf)
            order = np.lexsort((np.arange(len(s)), -s))[: min(k, int(allowed.sum()))]
            out.append(newest_first([Hit(self.chunks[j], float(s[j])) for j in order]))
        return out


def matched_terms(query: str, text: str, tokens: Literal["words", "identifiers"] = "words",
                  stopwords: str | None = "en") -> list[str]:
    """The query's keyword-search tokens that also occur in `text`, tokenized as
    `BM25Retriever` does with `tokens` (for a cell that shows *why* BM25 found a chunk).

    >>> matched_terms("what does max retries do", "cfg.max_retries = 3")
    []
    >>> matched_terms("what does max retries do", "cfg.max_retries = 3", "identifiers")
    ['max', 'retries']
    """
    import bm25s

    if tokens == "identifiers":
        stop = frozenset(bm25s.stopwords.STOPWORDS_EN) if stopwords == "en" else frozenset()
        q, t = identifier_words(query, stop), set(identifier_words(text, stop))
    else:
        q, t = (bm25s.tokenize([x], stopwords=stopwords, show_progress=False,
                               return_ids=False)[0] for x in (query, text))
        t = set(t)
    return list(dict.fromkeys(w for w in q if w in t))


class TfidfRetriever(Retriever):
    """TF-IDF cosine over prefix + body (scikit-learn): the keyword baseline of notebook 01."""

    kind = "tfidf"

    def __init__(self, chunks: Sequence[Chunk], placement: Literal["before", "after"] = "before"):
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.chunks, self._placement = list(chunks), placement
        self._vec = TfidfVectorizer(sublinear_tf=True, stop_words="english")
        self._m = self._vec.fit_transform([c.embedding_text(placement) for c in self.chunks])
        self._metas = [_meta(c) for c in self.chunks]

    @property
    def flags(self) -> list[str]:
        return []

    def describe(self) -> str:
        return f"TF-IDF cosine over {len(self.chunks)} chunks ({_joined(self._placement)})"

    def search(self, queries: Sequence[str], k: int, where: Where | Sequence[Where] = None
               ) -> list[list[Hit]]:
        sims = (self._vec.transform(list(queries)) @ self._m.T).toarray()
        out = []
        for s, w in zip(sims, _per_query(where, len(queries))):
            allowed = np.array([matches(m, w) for m in self._metas], dtype=bool)
            s = np.where(allowed, s, -np.inf)
            order = np.lexsort((np.arange(len(s)), -s))[: min(k, int(allowed.sum()))]
            out.append(newest_first([Hit(self.chunks[j], float(s[j])) for j in order]))
        return out


def newest_first(hits: list[Hit], decimals: int = 6) -> list[Hit]:
    """Break exact score ties toward the document with the newer effective date (e.g. the
    same sentence in the 2021 and the 2024 fee schedule: the 2024 one ranks first)."""
    return sorted(hits, key=lambda h: (-round(h.score, decimals), newer_first(h.chunk)))


def newer_first(chunk: Chunk) -> int:
    """A sort key that puts the chunk of the newer ``effective_date`` first (undated last)."""
    date = effective_date(chunk.metadata)
    return -date.toordinal() if date else 0


def fuse(rankings: Sequence[list[Hit]], weights: Sequence[float], k: int,
         constant: float = 0.0) -> list[Hit]:
    """Weighted reciprocal-rank fusion: score = sum(w / (rank + 1 + constant)).

    ``constant=0`` with weights (0.8, 0.2) is the Anthropic cookbook's fusion; ``constant=60``
    with equal weights is classic RRF. Ties break toward the newer document, then on chunk id
    for determinism.
    """
    scores: dict[str, float] = {}
    chunk_of: dict[str, Chunk] = {}
    for hits, w in zip(rankings, weights):
        for rank, h in enumerate(hits):
            scores[h.chunk.id] = scores.get(h.chunk.id, 0.0) + w / (rank + 1 + constant)
            chunk_of[h.chunk.id] = h.chunk
    best = sorted(scores, key=lambda cid: (-scores[cid], newer_first(chunk_of[cid]), cid))[:k]
    return [Hit(chunk_of[c], scores[c]) for c in best]


class HybridRetriever(Retriever):
    """Dense + BM25, each taking `candidates` hits, fused by weighted reciprocal rank."""

    kind = "hybrid"

    def __init__(self, dense: DenseRetriever, bm25: BM25Retriever, weights=(0.8, 0.2),
                 candidates: int = 150, constant: float = 0.0):
        self.dense, self.bm25 = dense, bm25
        self.weights, self.candidates, self.constant = tuple(weights), candidates, constant

    @property
    def flags(self) -> list[str]:
        return [*self.dense.flags, *self.bm25.flags]

    def with_fusion(self, weights: Sequence[float], constant: float = 0.0) -> "HybridRetriever":
        """The same dense and BM25 retrievers (not built again) fused with other weights and
        reciprocal-rank constant."""
        return HybridRetriever(self.dense, self.bm25, weights, self.candidates, constant)

    def describe(self) -> str:
        w = "/".join(f"{x:g}" for x in self.weights)
        return (f"hybrid: {described(self.dense)} and {described(self.bm25)}, "
                f"{self.candidates} candidates each, fused by weighted reciprocal rank "
                f"({w}, constant {self.constant:g})")

    def params(self) -> dict[str, object]:
        """How the fusion is built, for a results row."""
        return {"fusion_weights": list(self.weights), "fusion_candidates": self.candidates,
                "fusion_constant": self.constant,
                "bm25_tokens": getattr(self.bm25, "tokens", "words"),
                "dense_long": getattr(self.dense, "long", "truncate")}

    def search(self, queries: Sequence[str], k: int, where: Where | Sequence[Where] = None
               ) -> list[list[Hit]]:
        d = self.dense.search(queries, self.candidates, where)
        b = self.bm25.search(queries, self.candidates, where)
        return [fuse([x, y], self.weights, k, self.constant) for x, y in zip(d, b)]
