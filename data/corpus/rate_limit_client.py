"""A small HTTP client for the Northwind Pay API that respects rate limits.

The live API allows 100 requests per second per account (burst 200) and
answers HTTP 429 with a ``Retry-After`` header when the limit is exceeded.
This client smooths outgoing traffic with a token bucket and retries 429
and 5xx responses with backoff, reusing the same idempotency key so that a
retried POST can never create a second payment.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import uuid
from typing import Any

import requests

log = logging.getLogger(__name__)

LIVE_RATE_PER_SECOND = 100
TEST_RATE_PER_SECOND = 25
DEFAULT_MAX_RETRIES = 3
BASE_BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 8.0


class RateLimitExceeded(Exception):
    """Raised when the API still returns 429 after all retries."""


class TokenBucket:
    """Thread-safe token bucket used to pace requests on the client side."""

    def __init__(self, rate: float, capacity: int) -> None:
        self.rate = rate
        self.capacity = capacity
        self._tokens = float(capacity)
        self._updated = time.monotonic()
        self._lock = threading.Lock()

    def acquire(self) -> None:
        """Block until one token is available, then take it."""
        while True:
            with self._lock:
                now = time.monotonic()
                self._tokens = min(self.capacity, self._tokens + (now - self._updated) * self.rate)
                self._updated = now
                if self._tokens >= 1:
                    self._tokens -= 1
                    return
                wait = (1 - self._tokens) / self.rate
            time.sleep(wait)


class PayClient:
    """Minimal Northwind Pay client with pacing and safe retries."""

    def __init__(
        self,
        api_key: str,
        base_url: str = "https://api.pay.northwind.example/v2",
        max_retries: int = DEFAULT_MAX_RETRIES,
        session: requests.Session | None = None,
    ) -> None:
        self.api_key = api_key
        self.base_url = base_url.rstrip("/")
        self.max_retries = max_retries
        self.session = session or requests.Session()
        rate = TEST_RATE_PER_SECOND if api_key.startswith("nw_test_") else LIVE_RATE_PER_SECOND
        self.bucket = TokenBucket(rate=rate, capacity=rate * 2)

    def _backoff(self, attempt: int, retry_after: str | None) -> float:
        """Seconds to wait before the next attempt.

        A ``Retry-After`` header from the server always wins. Otherwise use
        exponential backoff with full jitter, capped at MAX_BACKOFF_SECONDS.
        """
        if retry_after is not None:
            try:
                return max(0.0, float(retry_after))
            except ValueError:
                pass
        ceiling = min(MAX_BACKOFF_SECONDS, BASE_BACKOFF_SECONDS * (2 ** attempt))
        return random.uniform(0, ceiling)

    def request(self, method: str, path: str, json: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one API request, retrying on 429 and 5xx responses."""
        headers = {"Authorization": f"Bearer {self.api_key}"}
        if method.upper() == "POST":
            # One key per logical operation, reused across retries.
            headers["Idempotency-Key"] = str(uuid.uuid4())

        for attempt in range(self.max_retries + 1):
            self.bucket.acquire()
            resp = self.session.request(method, self.base_url + path, json=json, headers=headers, timeout=30)
            if resp.status_code == 429 or resp.status_code >= 500:
                if attempt == self.max_retries:
                    break
                delay = self._backoff(attempt, resp.headers.get("Retry-After"))
                log.warning("pay api %s %s -> %s, retrying in %.2fs", method, path, resp.status_code, delay)
                time.sleep(delay)
                continue
            resp.raise_for_status()
            return resp.json()

        if resp.status_code == 429:
            raise RateLimitExceeded(f"{method} {path} still rate limited after {self.max_retries} retries")
        resp.raise_for_status()
        return resp.json()

    def create_payment(self, amount: int, currency: str, payment_method: str, **extra: Any) -> dict[str, Any]:
        """Create a payment; ``amount`` is in the currency's minor unit."""
        body = {"amount": amount, "currency": currency, "payment_method": payment_method, **extra}
        return self.request("POST", "/payments", json=body)
