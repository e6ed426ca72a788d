"""The null backend: keeps nothing, always available. The baseline every other backend must beat."""

from typing import Any

from memories.backends.base import DEFAULT_FIND_LIMIT, Availability, BackendEntry, MemoryBackend


class NullBackend(MemoryBackend):
    """Accepts every write and forgets it at once: get answers None, find and list nothing,
    delete False (nothing was there). Never raises, never touches the network or the database."""

    name = "null"
    is_cloud = False

    def available(self) -> Availability:
        return Availability(ok=True, reason="null keeps nothing and is always available")

    def put(
        self, uid: str, key: str, value: str, *, kind: str | None = None, meta: dict[str, Any] | None = None
    ) -> BackendEntry:
        return BackendEntry(uid=uid, key=key, value=value, kind=kind or "preference", meta=meta or {})

    def get(self, uid: str, key: str) -> BackendEntry | None:
        return None

    def find(self, uid: str, query_text: str, limit: int = DEFAULT_FIND_LIMIT) -> list[BackendEntry]:
        return []

    def list(self, uid: str) -> list[BackendEntry]:
        return []

    def delete(self, uid: str, key: str) -> bool:
        return False
