"""One small HTTP client for the Semantic Scholar APIs: rate limit, API key, retries, JSON, and a transport that
tests replace with recorded responses (no test touches the network)."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field

API_KEY_ENV = "S2_API_KEY"
RETRY_STATUSES = (429, 500, 502, 503, 504)


@dataclass
class Response:
    status: int
    body: bytes
    headers: dict = field(default_factory=dict)

    def json(self):
        return json.loads(self.body.decode("utf-8"))


class ApiError(RuntimeError):
    """An API answered with an error status that retrying did not cure (the message names the URL)."""

    def __init__(self, url: str, status: int, text: str):
        super().__init__(f"{url}: HTTP {status}: {text[:300]}")
        self.url, self.status = url, status


def urllib_transport(method: str, url: str, headers: dict, body: bytes | None, timeout: float) -> Response:
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return Response(answer.status, answer.read(), dict(answer.headers))
    except urllib.error.HTTPError as error:
        return Response(error.code, error.read() or b"", dict(error.headers or {}))


Transport = Callable[[str, str, dict, "bytes | None", float], Response]


class Client:
    """GET/POST JSON with at most ``rate`` requests per second, an ``x-api-key`` header when ``S2_API_KEY`` is set,
    and up to ``retries`` retries on 429/5xx (waiting ``Retry-After`` or an exponential back-off)."""

    def __init__(self, rate: float = 1.0, api_key: str | None = None, transport: Transport | None = None,
                 retries: int = 6, timeout: float = 60.0, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic):
        if rate <= 0:
            raise ValueError(f"rate must be positive (requests per second), got {rate}")
        self.interval = 1.0 / rate
        self.api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV, "")
        self.transport = transport or urllib_transport
        self.retries, self.timeout, self.sleep, self.clock = retries, timeout, sleep, clock
        self._last = None
        self.requests = 0

    def _wait_turn(self) -> None:
        now = self.clock()
        if self._last is not None and now - self._last < self.interval:
            self.sleep(self.interval - (now - self._last))
        self._last = self.clock()

    def request(self, method: str, url: str, params: dict | None = None, payload=None) -> Response:
        if params:
            url = f"{url}?{urllib.parse.urlencode(params)}"
        headers = {"Accept": "application/json", "User-Agent": "sdr-book (reproducibility study)"}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        body = None
        if payload is not None:
            body = json.dumps(payload).encode("utf-8")
            headers["Content-Type"] = "application/json"
        for attempt in range(self.retries + 1):
            self._wait_turn()
            self.requests += 1
            response = self.transport(method, url, headers, body, self.timeout)
            if response.status not in RETRY_STATUSES or attempt == self.retries:
                return response
            retry_after = response.headers.get("Retry-After") or response.headers.get("retry-after")
            self.sleep(float(retry_after) if retry_after else min(60.0, 2.0 ** attempt))
        raise AssertionError("unreachable")

    def json(self, method: str, url: str, params: dict | None = None, payload=None, allow=(200,)):
        """The decoded JSON of a successful answer; a status in ``allow`` other than 200 returns None."""
        response = self.request(method, url, params, payload)
        if response.status == 200:
            try:
                return response.json()
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                raise ApiError(url, response.status, f"not JSON ({error})") from None
        if response.status in allow:
            return None
        raise ApiError(url, response.status, response.body.decode("utf-8", "replace"))
