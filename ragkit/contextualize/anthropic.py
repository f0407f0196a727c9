"""Preambles from a Haiku-class model over Anthropic's Messages API."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Any

from ..types import Chunk, Document
from .base import Contextualizer, Preamble, _clean

API_URL = "https://api.anthropic.com/v1/messages"
API_KEY_ENV = "ANTHROPIC_API_KEY"
# USD per million tokens: (input, cache write, cache read, output), from Anthropic's price list
# (2025). Check https://www.anthropic.com/pricing before quoting a cost.
PRICES = {
    "claude-3-5-haiku": (0.80, 1.00, 0.08, 4.00),
    "claude-3-haiku": (0.25, 0.30, 0.03, 1.25),
    "claude-haiku-4-5": (1.00, 1.25, 0.10, 5.00),
}
_API_DOC = "<document>\n{doc}\n</document>"
_API_CHUNK = ("Here is a chunk of the document above:\n<chunk>\n{chunk}\n</chunk>\n"
              "Write a short context (one or two sentences) that places this chunk within the "
              "whole document, to improve search retrieval of the chunk. Reply with the context "
              "only.")


class AnthropicContextualizer(Contextualizer):
    """A Haiku-class model over the Messages API, the document block marked for prompt caching.

    The key is read from ``ANTHROPIC_API_KEY`` inside `_post`, used for that request's header
    and dropped: it is not an attribute, not in `settings()` (so not in cache records) and any
    error text is redacted. Anthropic caches a block only above a minimum length (2,048 tokens
    for Haiku models), so short documents show no cache reads. `stats` counts input, cache-write,
    cache-read and output tokens; `cost_usd()` prices them.
    """

    name = "anthropic"
    template_version = "a1"

    def __init__(self, model: str = "claude-3-5-haiku-latest", budget: int = 100,
                 budget_tokenizer: str = "minilm", timeout: float = 60.0, retries: int = 3):
        super().__init__(budget, budget_tokenizer)
        self.model, self.timeout, self.retries = model, timeout, retries

    @staticmethod
    def available() -> bool:
        return bool(os.environ.get(API_KEY_ENV, "").strip())

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "temperature": 0}

    def payload(self, doc_text: str, chunk_text: str) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": self.budget, "temperature": 0,
                "messages": [{"role": "user", "content": [
                    {"type": "text", "text": _API_DOC.format(doc=doc_text),
                     "cache_control": {"type": "ephemeral"}},
                    {"type": "text", "text": _API_CHUNK.format(chunk=chunk_text)}]}]}

    def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        """One Messages API call (the only place the key is touched)."""
        key = os.environ.get(API_KEY_ENV, "").strip()
        if not key:
            raise RuntimeError(f"set {API_KEY_ENV} to use the Anthropic generator")
        req = urllib.request.Request(API_URL, data=json.dumps(payload).encode("utf-8"),
                                     method="POST", headers={
                                         "x-api-key": key, "anthropic-version": "2023-06-01",
                                         "content-type": "application/json"})
        for attempt in range(self.retries + 1):
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as r:  # noqa: S310
                    return json.loads(r.read().decode("utf-8"))
            except urllib.error.HTTPError as e:
                body = e.read().decode("utf-8", "replace")[:400]
                if e.code in (429, 500, 502, 503, 529) and attempt < self.retries:
                    time.sleep(2 ** attempt)
                    continue
                raise RuntimeError(_redact(f"Anthropic API error {e.code}: {body}", key)) \
                    from None
            except urllib.error.URLError as e:
                if attempt < self.retries:
                    time.sleep(2 ** attempt)
                    continue
                raise RuntimeError(_redact(f"Anthropic API unreachable: {e.reason}", key)) \
                    from None
        raise AssertionError("unreachable")

    def generate(self, doc: Document, chunk: Chunk) -> Preamble:
        resp = self._post(self.payload(doc.text, chunk.text))
        text = _clean("".join(b.get("text", "") for b in resp.get("content", [])
                              if b.get("type") == "text"))
        usage = resp.get("usage", {})
        for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                  "output_tokens"):
            self.stats[k] += int(usage.get(k) or 0)
        flags = ("cut",) if resp.get("stop_reason") == "max_tokens" else ()
        return Preamble(text, flags, (), {"usage": {k: int(v or 0) for k, v in usage.items()
                                                    if isinstance(v, (int, float))},
                                          "finish": resp.get("stop_reason")})

    def cost_usd(self) -> float | None:
        """Cost of the calls so far, or None for a model without a known price."""
        price = next((p for name, p in PRICES.items() if self.model.startswith(name)), None)
        if price is None:
            return None
        s = self.stats
        return (s["input_tokens"] * price[0] + s["cache_creation_input_tokens"] * price[1]
                + s["cache_read_input_tokens"] * price[2] + s["output_tokens"] * price[3]) / 1e6

    def usage_line(self) -> str:
        s, cost = self.stats, self.cost_usd()
        return (f"{self.model}: input {s['input_tokens']}, cache write "
                f"{s['cache_creation_input_tokens']}, cache read {s['cache_read_input_tokens']}, "
                f"output {s['output_tokens']} tokens; cost "
                + (f"${cost:.4f}" if cost is not None else "unknown (no price for this model)"))


def _redact(text: str, secret: str) -> str:
    return text.replace(secret, "***") if secret else text
