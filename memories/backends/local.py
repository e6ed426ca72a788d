"""The local backend: this hub's own database, through memories.services and memories.selectors."""

import logging
from typing import Any

from django.db import DatabaseError, connection

from memories import selectors, services
from memories.backends.base import DEFAULT_FIND_LIMIT, Availability, BackendEntry, BackendError, MemoryBackend
from memories.embeddings import EmbeddingError
from memories.embeddings.store import embeddings_process_pending
from memories.models import MemoryEntry
from memories.validation import InvalidField

logger = logging.getLogger(__name__)


def database_availability() -> Availability:
    """Whether the hub's database answers a trivial query."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as error:
        return Availability(ok=False, reason=f"the database did not answer: {error}")
    return Availability(ok=True, reason="the hub's own database answers; nothing leaves this machine")


def _entry(entry: MemoryEntry) -> BackendEntry:
    return BackendEntry(
        uid=entry.uid,
        key=entry.key,
        value=entry.value,
        kind=entry.kind,
        meta=entry.meta,
        created=entry.created,
        updated=entry.updated,
        version=entry.version,
    )


class LocalBackend(MemoryBackend):
    """The owner's entries in the hub's database. Writes go through the services (history and all),
    reads through the selectors, so this backend sees exactly what the API serves. Nothing leaves
    the machine. A database error is retryable (a lock, a lost connection); bad input is not."""

    name = "local"
    is_cloud = False

    def available(self) -> Availability:
        return database_availability()

    def put(
        self, uid: str, key: str, value: str, *, kind: str | None = None, meta: dict[str, Any] | None = None
    ) -> BackendEntry:
        try:
            result = services.entry_put(owner=self.owner, uid=uid, key=key, value=value, kind=kind, meta=meta)
        except InvalidField as error:
            raise BackendError(str(error), retryable=False) from error
        except DatabaseError as error:
            raise BackendError(f"the database failed: {error}", retryable=True) from error
        return _entry(result.entry)

    def get(self, uid: str, key: str) -> BackendEntry | None:
        try:
            entry = selectors.entry_get(owner=self.owner, uid=uid, key=key)
        except DatabaseError as error:
            raise BackendError(f"the database failed: {error}", retryable=True) from error
        return _entry(entry) if entry is not None else None

    def find(self, uid: str, query_text: str, limit: int = DEFAULT_FIND_LIMIT) -> list[BackendEntry]:
        """The hub's ranked search, as ?q= and the tool's query answer: with embeddings on, the hybrid
        ranking (words and meaning fused); off, the words alone; then the other word matches newest
        first. Every entry the reference's substring scan finds is among the matches, in this order
        rather than newest first. A query of 1 or 2 characters is that scan, newest first."""
        try:
            found = selectors.entry_find(owner=self.owner, uid=uid, query_text=query_text)
            return [_entry(entry) for entry in found[:limit]]
        except DatabaseError as error:
            raise BackendError(f"the database failed: {error}", retryable=True) from error

    def settle(self, uid: str) -> None:
        """Embed uid's pending entries now, as the worker would (nothing to do with embeddings off)."""
        try:
            while embeddings_process_pending(owner=self.owner, uid=uid):
                pass
        except (EmbeddingError, DatabaseError) as error:
            # find still answers, by words alone.
            logger.warning("the local backend could not embed %s's entries: %s", uid, error)

    def list(self, uid: str) -> list[BackendEntry]:
        try:
            return [_entry(entry) for entry in selectors.entry_list(owner=self.owner, uid=uid)]
        except DatabaseError as error:
            raise BackendError(f"the database failed: {error}", retryable=True) from error

    def delete(self, uid: str, key: str) -> bool:
        try:
            return services.entry_delete(owner=self.owner, uid=uid, key=key) is not None
        except DatabaseError as error:
            raise BackendError(f"the database failed: {error}", retryable=True) from error
