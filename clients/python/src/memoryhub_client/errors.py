"""What can go wrong talking to a hub: one exception per kind of answer, all under MemoryHubError.

An answer the hub gave (4xx, 5xx) is an APIError subclass carrying the status, the hub's message
(`detail`) and the decoded body; a hub that could not be reached is a HubConnectionError; an argument the
client cannot send is an InvalidArgument (a ValueError too), raised before any request. A put or
update that the hub's write guard held for review (202) is a WriteHeld: nothing was stored.
"""

from __future__ import annotations

from typing import Any

from memoryhub_client.models import HeldWrite

__all__ = [
    "APIError",
    "AuthenticationError",
    "BadRequest",
    "Conflict",
    "HubConnectionError",
    "HubTimeout",
    "InvalidArgument",
    "MemoryHubError",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "PreconditionFailed",
    "RateLimited",
    "ServerError",
    "WriteHeld",
]


class MemoryHubError(Exception):
    """Every error this client raises."""


class InvalidArgument(MemoryHubError, ValueError):
    """An argument the client cannot send, refused before any request (a uid or key holding '/', an empty one,
    if_match with create_only, a search limit under 1): also a ValueError."""


class HubConnectionError(MemoryHubError):
    """The hub could not be reached, or the connection broke before an answer came."""


class HubTimeout(HubConnectionError):
    """No answer within the client's timeout."""


class WriteHeld(MemoryHubError):
    """The hub's write guard held a put or update for review (202; the account's guard mode is hold).

    Nothing is stored until staff approve it, and no read shows it until then: `held` is the held
    write (its `id`, the `guard_flags` it broke, its `status`), `location` where the hub reports its
    status (/api/v1/held/{id}). Sending it again only holds it again.
    """

    held: HeldWrite
    location: str | None

    def __init__(self, held: HeldWrite, *, location: str | None = None) -> None:
        flags = ", ".join(held.guard_flags) or "a guard rule"
        super().__init__(
            f"The write to {held.uid}/{held.key} is held for review (held write {held.id}, {flags}): "
            "nothing is stored until staff approve it."
        )
        self.held = held
        self.location = location


class APIError(MemoryHubError):
    """The hub answered with an error status."""

    status: int
    detail: str
    body: object

    def __init__(self, detail: str, *, status: int, body: object = None) -> None:
        super().__init__(f"{status}: {detail}")
        self.status = status
        self.detail = detail
        self.body = body


class BadRequest(APIError):
    """400: the request was refused as bad input; `errors` maps each field to what is wrong with it.

    A batch names the failing operations by index: {"operations": {"2": {"key": ["..."]}}}.
    """

    errors: dict[str, Any]

    def __init__(self, detail: str, *, status: int = 400, body: object = None) -> None:
        super().__init__(detail, status=status, body=body)
        self.errors = body if isinstance(body, dict) and "detail" not in body else {}


class AuthenticationError(APIError):
    """401: no token, or one the hub does not know."""


class PermissionDenied(APIError):
    """403: the account may not do this (running an evaluation needs staff)."""


class NotFound(APIError):
    """404: no such memory, user or route for this account (another account's look the same)."""


class Conflict(APIError):
    """409: the memory exists, so there is nothing to restore."""


class PreconditionFailed(APIError):
    """412: the memory is not at the version given in If-Match (or exists, for a create-only put)."""


class PayloadTooLarge(APIError):
    """413: the request body is above the hub's MEMORYHUB_MAX_BODY_BYTES."""


class RateLimited(APIError):
    """429: the token's rate limit is spent; `retry_after` is how many seconds the hub asked to wait."""

    retry_after: float | None

    def __init__(
        self, detail: str, *, status: int = 429, body: object = None, retry_after: float | None = None
    ) -> None:
        super().__init__(detail, status=status, body=body)
        self.retry_after = retry_after


class ServerError(APIError):
    """5xx: the hub failed; a retry may help."""


ERRORS_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequest,
    401: AuthenticationError,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    412: PreconditionFailed,
    413: PayloadTooLarge,
    429: RateLimited,
}


def error_for_status(status: int, body: object, *, retry_after: float | None = None) -> APIError:
    """The exception for an error answer: its class from the status, its message from DRF's shape."""
    detail = _detail(status, body)
    if status == 429:
        return RateLimited(detail, status=status, body=body, retry_after=retry_after)
    error_class = ERRORS_BY_STATUS.get(status) or (ServerError if status >= 500 else APIError)
    return error_class(detail, status=status, body=body)


def _detail(status: int, body: object) -> str:
    if isinstance(body, dict):
        detail = body.get("detail")
        if isinstance(detail, str):
            return detail
        # A field dict: "kind: must be 1 to 32 characters; got 40."
        return "; ".join(f"{field}: {_flatten(messages)}" for field, messages in body.items()) or f"HTTP {status}"
    if isinstance(body, str) and body.strip():
        return body.strip()[:500]
    return f"HTTP {status}"


def _flatten(messages: object) -> str:
    if isinstance(messages, list):
        return " ".join(_flatten(message) for message in messages)
    if isinstance(messages, dict):
        return "; ".join(f"{name}: {_flatten(inner)}" for name, inner in messages.items())
    return str(messages)
