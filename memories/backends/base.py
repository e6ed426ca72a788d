"""The memory backend protocol: the operations every place entries can live must offer.

A backend is bound to one account (its owner) when it is made, and every operation is about one
of that account's users (uid). The operations are the agent-side module's: available, put, get,
find, list, delete, with the properties name and is_cloud.

Errors: an operation that cannot be carried out raises BackendError, whose `retryable` says
whether trying again later could help (a timeout, a refused connection, a 5xx, a 429) or not (a
401, a 422, a bad configuration). "Not there" is not an error: get answers None, delete False.
`available` never raises: it answers whether the backend works, and why not.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User

DEFAULT_FIND_LIMIT = 10


class BackendError(Exception):
    """A backend operation failed.

    retryable: True when the same call could succeed later (network, timeout, 429, 5xx).
    status: the HTTP status behind the failure, when there was one (0 when none was received).
    retry_after: seconds the server asked to wait (429), when it said.
    """

    def __init__(self, message: str, *, retryable: bool, status: int = 0, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True)
class BackendEntry:
    """One entry as a backend holds it."""

    uid: str
    key: str
    value: str
    kind: str = "preference"
    meta: dict[str, Any] = field(default_factory=dict)
    created: datetime | None = None
    updated: datetime | None = None
    version: int = 1


@dataclass(frozen=True)
class Availability:
    """Whether a backend works now, and in words why (or why not)."""

    ok: bool
    reason: str


class MemoryBackend(ABC):
    """Where one account's entries can live. Subclasses state their own costs in their docstring."""

    name: str = ""
    is_cloud: bool = False

    def __init__(self, *, owner: User) -> None:
        self.owner = owner

    @abstractmethod
    def available(self) -> Availability:
        """Whether the backend answers now, after at most one round trip. Never raises."""

    @abstractmethod
    def put(
        self, uid: str, key: str, value: str, *, kind: str | None = None, meta: dict[str, Any] | None = None
    ) -> BackendEntry:
        """Create (uid, key) or replace its value; kind and meta left as None keep what is there.

        Returns the entry as stored. Raises BackendError.
        """

    @abstractmethod
    def get(self, uid: str, key: str) -> BackendEntry | None:
        """The entry (uid, key), or None. Raises BackendError."""

    @abstractmethod
    def find(self, uid: str, query_text: str, limit: int = DEFAULT_FIND_LIMIT) -> list[BackendEntry]:
        """uid's entries that match query_text, at most limit, in the backend's order. Raises BackendError.

        Every entry whose key or value holds query_text (any case) is a match, as in the reference,
        and a backend may find more (by words, or by meaning). The order is the backend's best
        answer first: the reference's scan (and the honcho backend) answer newest first; the local
        backend answers as the hub's ?q= ranks (memories.backends.local).
        """

    def settle(self, uid: str) -> None:  # noqa: B027 - optional: most backends find what they stored at once
        """Make what was stored for uid findable in every way find finds (the local backend makes
        the vectors its worker would make within seconds). Never raises."""

    @abstractmethod
    def list(self, uid: str) -> list[BackendEntry]:
        """All of uid's entries, newest first. Raises BackendError."""

    @abstractmethod
    def delete(self, uid: str, key: str) -> bool:
        """Delete (uid, key); True when there was one to delete. Raises BackendError."""

    def close(self) -> None:  # noqa: B027 - optional: a backend that holds nothing open keeps this no-op
        """Release what the backend holds open (connections). Safe to call twice."""
