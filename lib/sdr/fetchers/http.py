"""One small HTTP client for the Semantic Scholar and Hugging Face APIs: rate limit, API key, retries, JSON, and a
transport that tests replace with recorded or hand-written responses (no test touches the network).

What a multi-day fetch meets, and what :class:`Client` does about it:

* a network error (connection refused or reset, a timeout, a truncated answer: ``URLError``, ``OSError``,
  ``http.client.HTTPException``) or a 5xx is retried ``retries`` times with exponential back-off (a 5xx's
  ``Retry-After`` is honoured up to ``max_backoff_s``), then raised as :class:`NetworkError` / :class:`ApiError`
  naming the URL (the fetch resumes where it stopped on the next run);
* HTTP 429 (rate limited) waits ``Retry-After`` — given in seconds or as an HTTP date (RFC 9110 §10.2.3) — or an
  exponential back-off capped at ``max_backoff_s``, and keeps waiting for up to ``rate_limit_patience_s`` in all
  (six hours by default) instead of giving up after a few tries: a long rate limit slows a fetch, it does not end it;
* statuses a caller handles itself (``pass_through``, e.g. a 504 that makes the Graph API fetcher ask for a smaller
  page) are returned at once.

:class:`RetryPolicy` is that policy (how many retries, how long each wait), the one every download of the project
follows: :meth:`Client.request` for API calls, :meth:`Client.retrying` for file downloads outside it (S2ORC shards,
Hugging Face parquet files) and :class:`sdr.fetchers.bulk.ShardDownloader` for the bulk shards.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timezone
from typing import TypeVar

API_KEY_ENV = "S2_API_KEY"
SERVER_ERRORS = (500, 502, 503, 504)
RATE_LIMITED = 429
RETRY_STATUSES = (RATE_LIMITED, *SERVER_ERRORS)
#: The exceptions a transport raises for a connection that failed or broke off (retried like a 5xx).
NETWORK_ERRORS = (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError, OSError)


@dataclass
class Response:
    status: int
    body: bytes
    headers: dict = field(default_factory=dict)

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def header(self, name: str) -> str | None:
        """A header by name, case-insensitively (HTTP header names are)."""
        wanted = name.lower()
        return next((str(v) for k, v in self.headers.items() if str(k).lower() == wanted), None)


class ApiError(RuntimeError):
    """An API answered with an error status that retrying did not cure (the message names the URL)."""

    def __init__(self, url: str, status: int, text: str):
        super().__init__(f"{url}: HTTP {status}: {text[:300]}")
        self.url, self.status = url, status


class NetworkError(ApiError):
    """The connection failed on every retry (no HTTP status: ``status`` is 0)."""

    def __init__(self, url: str, error: BaseException, attempts: int):
        RuntimeError.__init__(self, f"{url}: network error after {attempts} attempts: {type(error).__name__}: "
                                    f"{str(error)[:200]} (the fetch resumes where it stopped when run again)")
        self.url, self.status = url, 0


def urllib_transport(method: str, url: str, headers: dict, body: bytes | None, timeout: float) -> Response:
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return Response(answer.status, answer.read(), dict(answer.headers))
    except urllib.error.HTTPError as error:
        return Response(error.code, error.read() or b"", dict(error.headers or {}))


Transport = Callable[[str, str, dict, "bytes | None", float], Response]


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """``Retry-After`` as seconds to wait from ``now`` (a Unix time): ``"120"`` or an HTTP date such as
    ``"Wed, 21 Oct 2015 07:28:00 GMT"`` (RFC 9110 §10.2.3); a date in the past is 0; None when absent or unreadable."""
    if value is None or not str(value).strip():
        return None
    text = str(value).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, when.timestamp() - now)


@dataclass(frozen=True)
class RetryPolicy:
    """Retries and back-off of the project's downloads: after the ``failures``-th failed attempt (counted from 0)
    wait ``2 ** failures`` seconds, or the server's ``Retry-After``, never longer than ``max_backoff_s``; give up
    after ``retries`` retries (``retries + 1`` attempts)."""

    retries: int = 6
    max_backoff_s: float = 300.0

    def wait_s(self, failures: int, retry_after: float | None = None) -> float:
        wait = 2.0 ** min(failures, 30) if retry_after is None else retry_after
        return min(self.max_backoff_s, wait)

    def gives_up(self, failures: int) -> bool:
        return failures >= self.retries


def retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth asking again (a rate limit or a server error) rather than an answer."""
    return status in RETRY_STATUSES


T = TypeVar("T")


class Client:
    """GET/POST JSON with at most ``rate`` requests per second and an ``x-api-key`` header when ``S2_API_KEY`` is
    set; network errors and 5xx retried ``retries`` times, 429 waited out for up to ``rate_limit_patience_s`` (see
    the module docstring). ``sleep``, ``clock`` (monotonic) and ``now`` (Unix time, for ``Retry-After`` dates) are
    injectable so that tests run without waiting."""

    def __init__(self, rate: float = 1.0, api_key: str | None = None, transport: Transport | None = None,
                 retries: int = 6, timeout: float = 60.0, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, now: Callable[[], float] = time.time,
                 rate_limit_patience_s: float = 6 * 3600.0, max_backoff_s: float = 300.0, say=None):
        if rate <= 0:
            raise ValueError(f"rate must be positive (requests per second), got {rate}")
        self.interval = 1.0 / rate
        self.api_key = api_key if api_key is not None else os.environ.get(API_KEY_ENV, "")
        self.transport = transport or urllib_transport
        self.retries, self.timeout, self.sleep, self.clock, self.now = retries, timeout, sleep, clock, now
        self.rate_limit_patience_s, self.max_backoff_s = rate_limit_patience_s, max_backoff_s
        self.say = say or (lambda message: print(message, file=sys.stderr, flush=True))
        self._last = None
        self.requests = 0
        self.waited_s = 0.0  # seconds spent waiting on 429s and back-offs (not the rate limit's spacing)
        self.retried = {"rate_limited": 0, "server_error": 0, "network_error": 0}

    def _wait_turn(self) -> None:
        now = self.clock()
        if self._last is not None and now - self._last < self.interval:
            self.sleep(self.interval - (now - self._last))
        self._last = self.clock()

    @property
    def policy(self) -> RetryPolicy:
        """This client's :class:`RetryPolicy` (from ``retries`` and ``max_backoff_s``)."""
        return RetryPolicy(self.retries, self.max_backoff_s)

    def _back_off(self, seconds: float) -> None:
        self.waited_s += seconds
        self.sleep(seconds)

    def headers(self, json_body: bool = False) -> dict:
        headers = {"Accept": "application/json", "User-Agent": "sdr-book (reproducibility study)"}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        if json_body:
            headers["Content-Type"] = "application/json"
        return headers

    def request(self, method: str, url: str, params: dict | None = None, payload=None,
                pass_through: tuple[int, ...] = ()) -> Response:
        """One answer: a success, a status in ``pass_through``, a 4xx, or the last 429/5xx once retrying is spent.
        Raises :class:`NetworkError` when the connection fails ``retries + 1`` times."""
        if params:
            url = f"{url}?{urllib.parse.urlencode(params)}"
        body = json.dumps(payload).encode("utf-8") if payload is not None else None
        headers = self.headers(json_body=body is not None)
        failures, limited, limited_s = 0, 0, 0.0
        while True:
            self._wait_turn()
            self.requests += 1
            try:
                response = self.transport(method, url, headers, body, self.timeout)
            except NETWORK_ERRORS as error:
                if self.policy.gives_up(failures):
                    raise NetworkError(url, error, failures + 1) from None
                self.retried["network_error"] += 1
                self._back_off(self.policy.wait_s(failures))
                failures += 1
                continue
            if response.status in pass_through or response.status not in RETRY_STATUSES:
                return response
            if response.status == RATE_LIMITED:
                wait = retry_after_seconds(response.header("Retry-After"), self.now())
                wait = self.policy.wait_s(limited) if wait is None else wait  # a 429's own wait is not capped
                if limited_s + wait > self.rate_limit_patience_s:
                    return response  # rate limited for longer than we wait: the caller raises, naming the URL
                if wait >= 60:
                    self.say(f"rate limited by {urllib.parse.urlparse(url).netloc}: waiting {wait:.0f} s "
                             f"({limited_s / 60:.0f} min waited on this request so far)")
                self.retried["rate_limited"] += 1
                self._back_off(wait)
                limited, limited_s = limited + 1, limited_s + wait
                continue
            if self.policy.gives_up(failures):
                return response
            # a 5xx's Retry-After is capped: a server that is down says nothing reliable about when it is back
            wait = self.policy.wait_s(failures, retry_after_seconds(response.header("Retry-After"), self.now()))
            self.retried["server_error"] += 1
            self._back_off(wait)
            failures += 1

    def retrying(self, url: str, attempt: Callable[[], T], retryable: tuple[type[BaseException], ...] = ()) -> T:
        """``attempt()`` (a download outside :meth:`request`: a shard through a pre-signed link, a parquet file)
        under this client's :class:`RetryPolicy`, its waits counted as :meth:`request`'s are.

        A network error (:data:`NETWORK_ERRORS`, or one of ``retryable``: e.g. a gzip stream that ended early) and
        an HTTP 429/5xx (urllib's ``HTTPError``) are retried; when the retries are spent, raised as
        :class:`NetworkError` / :class:`ApiError` naming ``url``. Any other HTTP error is raised at once as
        :class:`ApiError` with its status (an expired link, a missing file: the caller decides)."""
        failures = 0
        while True:
            try:
                return attempt()
            except urllib.error.HTTPError as error:
                if not retryable_status(error.code):
                    raise ApiError(url, error.code, str(error.reason)) from None
                if self.policy.gives_up(failures):
                    raise ApiError(url, error.code, f"{error.reason} (after {failures + 1} attempts; the fetch "
                                                    f"resumes where it stopped when run again)") from None
                headers = error.headers if error.headers is not None else {}
                wait = self.policy.wait_s(failures, retry_after_seconds(headers.get("Retry-After"), self.now()))
                self.retried["rate_limited" if error.code == RATE_LIMITED else "server_error"] += 1
            except (*NETWORK_ERRORS, *retryable) as error:
                if self.policy.gives_up(failures):
                    raise NetworkError(url, error, failures + 1) from None
                wait = self.policy.wait_s(failures)
                self.retried["network_error"] += 1
            self._back_off(wait)
            failures += 1

    def json(self, method: str, url: str, params: dict | None = None, payload=None, allow=(200,),
             pass_through: tuple[int, ...] = ()):
        """The decoded JSON of a successful answer; a status in ``allow`` other than 200 returns None; a status in
        ``pass_through`` raises :class:`ApiError` at once (for the caller to handle)."""
        response = self.request(method, url, params, payload, pass_through=pass_through)
        if response.status == 200:
            try:
                return response.json()
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                raise ApiError(url, response.status, f"not JSON ({error})") from None
        if response.status in allow:
            return None
        raise ApiError(url, response.status, response.body.decode("utf-8", "replace"))
