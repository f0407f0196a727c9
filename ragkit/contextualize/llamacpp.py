"""Preambles from a small local LLM through llama-cpp-python (gemma-3-270m, SmolLM2-135M),
the document's KV cache reused across its chunks. The model files and the loader live in
`ragkit.models`.

The two packaged models are the `llm` extra (``make setup-llm``). Without it, `gemma` and
`smollm2` still read the committed preamble caches: their keys hold the pinned model file's
fingerprint (`PINNED_FINGERPRINTS`), so no file is needed to find a record, and the first
preamble that is not cached raises ImportError naming the extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..models import file_fingerprint, gemma_gguf, llama_threads, load_llama, smollm2_gguf
from ..text.tokens import count_tokens
from ..types import Chunk, Document
from .base import Contextualizer, Preamble, _clean

# Prompts. The document always comes first so that its evaluation is shared by its chunks.
_BASE_DOC = "<document>\n{doc}\n</document>\n"
_BASE_CHUNK = ("\n<chunk>\n{chunk}\n</chunk>\n\nIn one sentence, where this chunk sits in the "
               "document above and what it covers: This chunk")
_BASE_PRIMER = "This chunk"
_CHAT_USER = ("<document>\n{doc}\n</document>\n{split}Here is a chunk of the document above:\n"
              "<chunk>\n{chunk}\n</chunk>\nWrite one or two short sentences that place this chunk "
              "in the whole document (what the document is, which part this is, what it is "
              "about), to help a search engine find it. Reply with those sentences only.")
_SPLIT = "\x00SPLIT\x00"

# `ragkit.models.file_fingerprint` of the GGUF files the pinned packages ship (constraints.txt);
# tests/contextualize/test_generators.py checks them where the packages are installed.
PINNED_FINGERPRINTS = {"gemma-3-270m-Q4_K_M": "b7ba286aa859cef6",
                       "SmolLM2-135M-Instruct-Q4_1": "04da094c9f01f0d3"}


@dataclass(frozen=True)
class _Counted:
    """A count under a name: what `ragkit.text.tokens.count_tokens` needs of a tokenizer."""

    name: str
    count: Callable[[str], int]


class LlamaCppContextualizer(Contextualizer):
    """A GGUF model through llama-cpp-python, greedy, with the document's KV cache reused.

    For each chunk the prompt is ``document part + chunk part``. The document part's tokens are
    evaluated once and kept; for the document's next chunk the context is truncated back to the
    end of the document part and only the chunk part and the answer are computed. Because the
    document part is always evaluated from an empty context in the same batches, the output does
    not depend on the order chunks come in, and ``reuse_prefix=False`` (reset + evaluate the
    document for every chunk) gives the same text, only slower — the speed bench compares both.

    A document whose tokens do not fit ``n_ctx // 2`` is replaced by its opening lines (about
    ``n_ctx // 16`` tokens: title and introduction) + ``[…]`` + a window: the document is laid on
    a fixed grid of half-overlapping windows and the chunk gets the window that overlaps it most
    (so neighbouring chunks share a window and its cache); such preambles are flagged ``window``
    and the record keeps the spans (``info.head``, ``info.window``).
    """

    template_version = "l1"

    def __init__(self, model_path: str | Path | None, *, name: str, model: str,
                 chat: bool = False, budget: int = 100, budget_tokenizer: str = "minilm",
                 n_ctx: int = 4096, n_threads: int | None = None, seed: int = 0,
                 reuse_prefix: bool = True, fingerprint: str | None = None,
                 missing: str = ""):
        """`model_path` None (with the file's `fingerprint`, and `missing`, the reason): a
        generator that reads its cache and raises ImportError(`missing`) when asked to run."""
        super().__init__(budget, budget_tokenizer)
        if model_path is None and not (fingerprint and missing):
            raise ValueError("without a model file, give its fingerprint and why it is missing")
        self.model_path = Path(model_path) if model_path is not None else None
        self.missing = missing
        self.name, self.model, self.chat = name, model, chat
        self.template_version = "l1-chat" if chat else "l1-base"
        self.n_ctx, self.seed = n_ctx, seed
        self.n_threads = llama_threads(n_threads)
        self.reuse_prefix = reuse_prefix
        # a base model is asked for one sentence (stop at the line end); a chat model ends its
        # turn itself
        self.stop = ["\n\n", "</chunk>", "<chunk>"] if chat else ["\n", "</", "<chunk"]
        self._llm = None
        self._fp: str | None = fingerprint
        self._model_tokens: _Counted | None = None
        self._held: list[int] | None = None  # the document part whose KV is in the context

    # -- the model ---------------------------------------------------------------------------
    @property
    def llm(self):
        if self._llm is None:
            if self.model_path is None:
                raise ImportError(self.missing)
            # swa_full: gemma-3 uses sliding-window attention; without a full-size SWA cache
            # llama.cpp cannot truncate the context back to the document part.
            self._llm = load_llama(self.model_path, n_ctx=self.n_ctx, seed=self.seed,
                                   n_threads=self.n_threads, n_batch=512, swa_full=True)
            self._held = None
        return self._llm

    def settings(self) -> dict[str, Any]:
        if self._fp is None:
            self._fp = file_fingerprint(self.model_path)
        return {**super().settings(), "fingerprint": self._fp, "n_ctx": self.n_ctx,
                "decoding": "greedy", "seed": self.seed}

    def record_info(self) -> dict[str, Any]:
        try:
            import llama_cpp

            return {"runtime": f"llama-cpp-python {llama_cpp.__version__}"}
        except ImportError:
            return {}

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
        self._llm, self._held = None, None

    # -- prompts -----------------------------------------------------------------------------
    def _tok(self, text: str, bos: bool) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=bos, special=self.chat)

    def prompt_parts(self, doc_text: str, chunk_text: str) -> tuple[str, str]:
        """(document part, chunk part) of the prompt, as text."""
        if not self.chat:
            return _BASE_DOC.format(doc=doc_text), _BASE_CHUNK.format(chunk=chunk_text)
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ValueError(f"{self.model_path.name} has no chat template")
        fmt = Jinja2ChatFormatter(template, eos_token="", bos_token="")
        content = _CHAT_USER.format(doc=doc_text, chunk=chunk_text, split=_SPLIT)
        rendered = fmt(messages=[{"role": "user", "content": content}]).prompt
        head, tail = rendered.split(_SPLIT)
        return head, tail

    def _window(self, doc: Document, chunk: Chunk) -> tuple[int, int] | None:
        """None when the whole document fits; else the window span (see class docstring)."""
        n_doc, limit = self.count_model(doc.text), self.n_ctx // 2
        # (the window leaves room for the document's head, n_ctx / 16 tokens, see `_head`)
        if n_doc <= limit:
            return None
        limit -= self.n_ctx // 16
        size = int(len(doc.text) * limit / n_doc * 0.9)
        step = max(1, size // 2)
        starts = list(range(0, max(1, len(doc.text) - size) + step, step))
        best = max(starts, key=lambda s: (min(s + size, chunk.end) - max(s, chunk.start), -s))
        s, e = best, min(best + size, len(doc.text))
        while self.count_model(doc.text[s:e]) > limit:  # rare: denser text than average
            cut = max(2, (e - s) // 10)
            s, e = (s + cut // 2, e - (cut - cut // 2)) if chunk.start > s else (s, e - cut)
        # snap to line starts so the window does not begin or end mid-line
        if s > 0:
            nl = doc.text.find("\n", s, chunk.start)
            s = nl + 1 if nl != -1 else s
        nl = doc.text.rfind("\n", chunk.end, e)
        e = nl if nl != -1 and e < len(doc.text) else e
        return (s, e)

    def _head(self, doc: Document) -> int:
        """End of the document's opening lines (about n_ctx / 16 tokens: the title and first
        lines), shown before a window so that a windowed chunk still sees what the document is."""
        n_doc = self.count_model(doc.text)
        end = int(len(doc.text) * (self.n_ctx // 16) / max(1, n_doc))
        nl = doc.text.rfind("\n", 0, end)
        return nl if nl > 0 else end

    def count_model(self, text: str) -> int:
        """Tokens of `text` in the model's own tokenizer (no BOS), from ragkit's one count cache
        (`ragkit.text.tokens.count_tokens`, under the model file's fingerprint)."""
        if self._model_tokens is None:
            name = f"llama.cpp:{self.settings()['fingerprint']}:{'chat' if self.chat else 'base'}"
            self._model_tokens = _Counted(name, lambda text: len(self._tok(text, False)))
        return count_tokens(text, self._model_tokens)

    # -- generation --------------------------------------------------------------------------
    def generate(self, doc: Document, chunk: Chunk) -> Preamble:
        flags: list[str] = []
        info: dict[str, Any] = {}
        window = self._window(doc, chunk)
        doc_text = doc.text
        if window is not None:
            s, e = window
            head = self._head(doc)
            doc_text = (doc.text[:head] + "\n[…]\n" if 0 < head < s else "") + doc.text[s:e]
            flags.append("window")
            info["window"] = [s, e]
            if 0 < head < s:
                info["head"] = [0, head]
        chunk_text = chunk.text
        head, tail = self.prompt_parts(doc_text, chunk_text)
        pre = self._tok(head, True)
        suf = self._tok(tail, False)
        room = self.n_ctx - len(pre) - self.budget - 1
        if len(suf) > room:  # a chunk longer than the context left: keep its beginning
            keep = int(len(chunk_text) * room / len(suf) * 0.9)
            head, tail = self.prompt_parts(doc_text, chunk_text[:keep])
            suf = self._tok(tail, False)
            flags.append("chunk_cut")
        llm = self.llm
        reused = (self.reuse_prefix and self._held == pre and llm.n_tokens >= len(pre)
                  # drop the previous chunk and answer from the KV cache, keep the document
                  and llm._ctx.kv_cache_seq_rm(-1, len(pre), -1))
        if reused:
            llm.n_tokens = len(pre)
            self.stats["prefix_reused"] += 1
        else:
            llm.reset()
            llm.eval(pre)
            self._held = pre
            self.stats["prefix_evaluated"] += 1
        self.stats["prefix_tokens_evaluated"] += 0 if reused else len(pre)
        out = llm.create_completion(pre + suf, max_tokens=self.budget, temperature=0.0,
                                    repeat_penalty=1.0, seed=self.seed,
                                    stop=self.stop)
        choice = out["choices"][0]
        text = choice["text"]
        if not self.chat:
            text = _BASE_PRIMER + text
        text = _clean(text)
        if choice.get("finish_reason") == "length":
            flags.append("cut")
        info.update(finish=choice.get("finish_reason"),
                    completion_tokens=out["usage"]["completion_tokens"])
        self.stats["prompt_tokens"] += len(pre) + len(suf)
        self.stats["completion_tokens"] += out["usage"]["completion_tokens"]
        return Preamble(text, tuple(flags), (), info)


def _packaged(find: Callable[[], Path], model: str) -> dict[str, Any]:
    """The model file, or (no file, its pinned fingerprint, why) when its package is absent."""
    try:
        return {"model_path": find()}
    except (ImportError, FileNotFoundError) as e:
        return {"model_path": None, "fingerprint": PINNED_FINGERPRINTS[model],
                "missing": f"{model}: {e}"}


def gemma(budget: int = 100, **kw: Any) -> LlamaCppContextualizer:
    """gemma-3-270m (base model, completion prompt)."""
    model = "gemma-3-270m-Q4_K_M"
    return LlamaCppContextualizer(**_packaged(gemma_gguf, model), name="gemma", model=model,
                                  chat=False, budget=budget, **kw)


def smollm2(budget: int = 100, **kw: Any) -> LlamaCppContextualizer:
    """SmolLM2-135M-Instruct (chat template from the GGUF)."""
    model = "SmolLM2-135M-Instruct-Q4_1"
    return LlamaCppContextualizer(**_packaged(smollm2_gguf, model), name="smollm2",
                                  model=model, chat=True, budget=budget, **kw)
