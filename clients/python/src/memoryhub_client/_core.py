"""The one request builder, response mapper and retry policy that MemoryHub and AsyncMemoryHub share.

The clients only loop: build the request here, send it (blocking or awaited), ask here whether to
retry and how long to wait, and map the answer here. Nothing about HTTP is decided twice.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from memoryhub_client.errors import APIError, HubConnectionError, HubTimeout, InvalidArgument, error_for_status

T = TypeVar("T")

API_PREFIX = "/api/v1"
DEFAULT_BASE_URL = "http://127.0.0.1:8000"
DEFAULT_TIMEOUT = 10.0  # seconds, for each of connect, read, write and pool
DEFAULT_MAX_RETRIES = 2
DEFAULT_BACKOFF = 0.5  # seconds before the first retry without Retry-After; doubles each time
MAX_BACKOFF = 8.0  # seconds, the longest wait between two attempts without Retry-After
DEFAULT_MAX_RETRY_WAIT = 30.0  # seconds: a Retry-After longer than this is raised, not waited out
RETRY_STATUSES = frozenset({429, 503})

try:
    from importlib.metadata import PackageNotFoundError, version

    try:
        CLIENT_VERSION = version("memoryhub-client")
    except PackageNotFoundError:
        CLIENT_VERSION = "0"
except ImportError:  # pragma: no cover - importlib.metadata is in every supported Python
    CLIENT_VERSION = "0"


@dataclass(frozen=True)
class Call(Generic[T]):
    """One API call: what to send and how to read a successful answer.

    `idempotent` says whether sending it twice answers as sending it once; only such calls are retried
    after a 503 or a connection lost mid-way (a delete, or a write naming a version, sent again after it was
    applied would answer 404 or 412 for a change that was made). A 429 is retried for any call: the hub's rate
    limit refuses a request before doing anything.
    """

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    params: Mapping[str, Any] | None = None
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    idempotent: bool = True


@dataclass(frozen=True)
class Settings:
    """How a client reaches its hub: where, as whom, and how patiently."""

    base_url: str
    token: str | None
    timeout: float
    max_retries: int
    backoff: float
    max_retry_wait: float

    @classmethod
    def from_arguments(
        cls,
        base_url: str | None,
        token: str | None,
        *,
        timeout: float,
        max_retries: int,
        backoff: float,
        max_retry_wait: float,
    ) -> Settings:
        url = (base_url or os.environ.get("MEMORYHUB_URL") or DEFAULT_BASE_URL).rstrip("/")
        url = url.removesuffix(API_PREFIX)
        if not url.lower().startswith(("http://", "https://")):
            raise ValueError(f"The hub's URL must start with http:// or https://; got {url!r}.")
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more.")
        return cls(
            base_url=url,
            token=token if token is not None else os.environ.get("MEMORYHUB_TOKEN"),
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_retry_wait=max_retry_wait,
        )

    def client_arguments(self) -> dict[str, Any]:
        """What an httpx.Client or httpx.AsyncClient needs to speak to this hub."""
        headers = {"Accept": "application/json", "User-Agent": f"memoryhub-client/{CLIENT_VERSION}"}
        if self.token:
            headers["Authorization"] = f"Token {self.token}"
        return {"base_url": self.base_url + API_PREFIX, "headers": headers, "timeout": httpx.Timeout(self.timeout)}


def segment(value: str, *, name: str) -> str:
    """uid or key as one path segment. '/' can never travel in a path (the hub splits on it)."""
    if "/" in value:
        raise InvalidArgument(f"{name} {value!r} holds '/', which cannot travel in a URL path.")
    if not value:
        raise InvalidArgument(f"{name} must not be empty.")
    if value in (".", ".."):
        # Dot segments would be folded away by URL normalisation; percent-encoded they arrive as sent.
        return value.replace(".", "%2E")
    return quote(value, safe="")


def build_request(http: httpx.Client | httpx.AsyncClient, call: Call[Any]) -> httpx.Request:
    """The httpx request for a call (both kinds of httpx client build requests the same way)."""
    params = {name: value for name, value in (call.params or {}).items() if value is not None}
    return http.build_request(
        call.method,
        call.path,
        params=params or None,
        json=call.body if call.body is not None else None,
        headers=dict(call.headers),
    )


def retry_after_seconds(response: httpx.Response) -> float | None:
    """The Retry-After header in seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    header = response.headers.get("Retry-After")
    if not header:
        return None
    header = header.strip()
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return max(0.0, (moment - datetime.now(UTC)).total_seconds())


def backoff_delay(settings: Settings, attempt: int) -> float:
    """Exponential backoff with a little jitter, so that many clients do not retry in step."""
    delay: float = min(MAX_BACKOFF, settings.backoff * 2.0**attempt)
    return delay * (1 + random.random() * 0.25)


def delay_after_response(settings: Settings, call: Call[Any], attempt: int, response: httpx.Response) -> float | None:
    """Seconds to wait before sending the call again, or None to keep this answer."""
    if response.status_code not in RETRY_STATUSES or attempt >= settings.max_retries:
        return None
    if response.status_code == 503 and not call.idempotent and not _rolled_back(response):
        return None
    asked = retry_after_seconds(response)
    if asked is not None:
        # Waiting longer than the caller would is worse than telling them: RateLimited carries the figure.
        return asked if asked <= settings.max_retry_wait else None
    return backoff_delay(settings, attempt)


def _rolled_back(response: httpx.Response) -> bool:
    """Whether a 503 says the database rolled the request back (code "database_busy"): nothing was written, so any
    call may be sent again as it was."""
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("code") == "database_busy"


def delay_after_error(settings: Settings, call: Call[Any], attempt: int, error: httpx.TransportError) -> float | None:
    """Seconds to wait before trying again after a transport failure, or None to give up.

    A failure to connect means nothing was sent, so any call may be retried; a connection lost
    after sending may have been acted on, so only idempotent calls are.
    """
    if attempt >= settings.max_retries:
        return None
    if not (_never_sent(error) or call.idempotent):
        return None
    return backoff_delay(settings, attempt)


def _never_sent(error: httpx.TransportError) -> bool:
    """Whether the failure came before the request could leave (no connection was made)."""
    return isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout))


def connection_error(settings: Settings, error: httpx.TransportError, call: Call[Any]) -> HubConnectionError:
    """The error for a transport failure; for a write whose request may have left, it says the hub may have made
    the change (read before trying again)."""
    never_sent = _never_sent(error)
    maybe_made = "" if call.method in ("GET", "HEAD") or never_sent else " The hub may have made the change."
    if isinstance(error, httpx.TimeoutException):
        return HubTimeout(
            f"No answer from {settings.base_url} within {settings.timeout:g} s ({type(error).__name__}).{maybe_made}"
        )
    if never_sent:
        return HubConnectionError(f"Cannot reach {settings.base_url}: {error}")
    return HubConnectionError(f"The connection to {settings.base_url} broke before its answer: {error}.{maybe_made}")


def answer(call: Call[T], response: httpx.Response) -> T:
    """The call's result from a successful answer, or the exception for an error answer."""
    if response.is_success or response.status_code == 304:
        return call.parse(response)
    raise error_from_response(response)


def error_from_response(response: httpx.Response) -> APIError:
    try:
        body: object = response.json()
    except ValueError:
        body = response.text
    return error_for_status(response.status_code, body, retry_after=retry_after_seconds(response))
