"""Preambles from a Haiku-class model over Anthropic's Messages API, through the official
`anthropic` SDK (the ``api`` extra: ``pip install 'ragkit[api]'``).

The SDK brings the retries (429, 5xx and connection errors, with backoff), the prompt-caching
block (``cache_control``) and the usage accounting (input, cache-write, cache-read and output
tokens). It is imported only when a request is made, so ragkit imports without it.
"""

from __future__ import annotations

import os
from typing import Any

from ..types import Chunk, Document
from .base import Contextualizer, GeneratorUnavailable, Preamble, _clean

API_KEY_ENV = "ANTHROPIC_API_KEY"
# USD per million tokens: (input, cache write, cache read, output), from Anthropic's price list
# (2025). Check https://www.anthropic.com/pricing before quoting a cost.
PRICES = {
    "claude-3-5-haiku": (0.80, 1.00, 0.08, 4.00),
    "claude-3-haiku": (0.25, 0.30, 0.03, 1.25),
    "claude-haiku-4-5": (1.00, 1.25, 0.10, 5.00),
}
USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                "output_tokens")
_API_DOC = "<document>\n{doc}\n</document>"
_API_CHUNK = ("Here is a chunk of the document above:\n<chunk>\n{chunk}\n</chunk>\n"
              "Write a short context (one or two sentences) that places this chunk within the "
              "whole document, to improve search retrieval of the chunk. Reply with the context "
              "only.")


class AnthropicContextualizer(Contextualizer):
    """A Haiku-class model over the Messages API, the document block marked for prompt caching.

    Without a key, or when the API cannot be reached or refuses the request, `_post` raises
    `GeneratorUnavailable` (one line, the key redacted). The key is read from
    ``ANTHROPIC_API_KEY`` inside `_post`, handed to a client made for that
    request and dropped: it is not an attribute, not in `settings()` (so not in cache records),
    and any error text is redacted. Anthropic caches a block only above a minimum length (2,048
    tokens for Haiku models), so short documents show no cache reads. `stats` counts input,
    cache-write, cache-read and output tokens; `cost_usd()` prices them.

    `http_client` (an ``httpx.Client``) is passed to the SDK as it is: tests give it a mock
    transport, a proxy setup gives it its own.
    """

    name = "anthropic"
    template_version = "a1"

    def __init__(self, model: str = "claude-3-5-haiku-latest", budget: int = 100,
                 budget_tokenizer: str = "minilm", timeout: float = 60.0, retries: int = 3,
                 http_client: Any = None):
        super().__init__(budget, budget_tokenizer)
        self.model, self.timeout, self.retries = model, timeout, retries
        self.http_client = http_client

    @staticmethod
    def available() -> bool:
        return bool(os.environ.get(API_KEY_ENV, "").strip())

    def unavailable(self) -> str | None:
        return None if self.available() else f"set {API_KEY_ENV} to use the Anthropic generator"

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "temperature": 0}

    def record_info(self) -> dict[str, Any]:
        try:
            import anthropic
        except ImportError:
            return {}
        return {"runtime": f"anthropic {anthropic.__version__}"}

    def payload(self, doc_text: str, chunk_text: str) -> dict[str, Any]:
        return {"model": self.model, "max_tokens": self.budget, "temperature": 0,
                "messages": [{"role": "user", "content": [
                    {"type": "text", "text": _API_DOC.format(doc=doc_text),
                     "cache_control": {"type": "ephemeral"}},
                    {"type": "text", "text": _API_CHUNK.format(chunk=chunk_text)}]}]}

    def _post(self, payload: dict[str, Any]) -> Any:
        """One Messages API call (the only place the key is touched)."""
        key = os.environ.get(API_KEY_ENV, "").strip()
        if not key:
            raise GeneratorUnavailable(self.unavailable())
        try:
            import anthropic
        except ImportError as e:
            raise ImportError("the Anthropic generator needs `pip install 'ragkit[api]'` (the "
                              "anthropic SDK)") from e
        client = anthropic.Anthropic(api_key=key, timeout=self.timeout,
                                     max_retries=self.retries, http_client=self.http_client)
        # the SDK's own arguments by name; the rest (temperature) goes in the body as it is
        named = {k: v for k, v in payload.items() if k in ("model", "max_tokens", "messages")}
        extra = {k: v for k, v in payload.items() if k not in named}
        problem = None
        try:
            return client.messages.create(**named, extra_body=extra or None)
        except anthropic.APIStatusError as e:
            problem = f"Anthropic API error {e.status_code}: {str(e)[:400]}"
        except anthropic.APIConnectionError as e:
            problem = (f"Anthropic API unreachable: the API could not be reached "
                       f"({str(e).strip() or type(e).__name__}); check the network")
        finally:
            if self.http_client is None:  # a client of our own; the caller's stays open
                client.close()
        # raised outside the handler, so that the SDK's error (which may echo the request)
        # is not kept as the context of this one
        raise GeneratorUnavailable(" ".join(_redact(problem, key).split()))

    def generate(self, doc: Document, chunk: Chunk) -> Preamble:
        resp = self._post(self.payload(doc.text, chunk.text))
        text = _clean("".join(getattr(b, "text", "") for b in resp.content
                              if getattr(b, "type", "") == "text"))
        usage = {k: int(getattr(resp.usage, k, 0) or 0) for k in USAGE_FIELDS}
        for k, v in usage.items():
            self.stats[k] += v
        flags = ("cut",) if resp.stop_reason == "max_tokens" else ()
        return Preamble(text, flags, (), {"usage": usage, "finish": resp.stop_reason})

    def cost_usd(self) -> float | None:
        """Cost of the calls so far, or None for a model without a known price."""
        price = next((p for name, p in PRICES.items() if self.model.startswith(name)), None)
        if price is None:
            return None
        s = self.stats
        return sum(s[k] * p for k, p in zip(USAGE_FIELDS, price)) / 1e6

    def usage_line(self) -> str:
        s, cost = self.stats, self.cost_usd()
        return (f"{self.model}: input {s['input_tokens']}, cache write "
                f"{s['cache_creation_input_tokens']}, cache read {s['cache_read_input_tokens']}, "
                f"output {s['output_tokens']} tokens; cost "
                + (f"${cost:.4f}" if cost is not None else "unknown (no price for this model)"))


def _redact(text: str, secret: str) -> str:
    return text.replace(secret, "***") if secret else text
