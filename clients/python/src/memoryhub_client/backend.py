"""HubBackend: the agent-side memory module's Backend protocol, served by a MemoryHub.

An agent written against that module (ok, put, get, find, all, rm, name, cloud) keeps its code and
constructs `HubBackend(url, token)` where it constructed a local or Honcho backend. The answers
keep the protocol's shapes: entries with key, value, uid, etype, created and updated as Unix
seconds, and meta; booleans for writes; None or [] when the hub cannot answer (the error is logged),
as the protocol's other backends do.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from memoryhub_client import _core
from memoryhub_client.client import MemoryHub
from memoryhub_client.errors import MemoryHubError, NotFound
from memoryhub_client.models import BatchOperation, Entry

logger = logging.getLogger(__name__)

__all__ = ["BackendEntry", "HubBackend"]

DEFAULT_KIND = "preference"
# The hub's privacy classes: local never leaves the hub (never synced, never sent to a remote embeddings endpoint).
PRIVACY_CLASSES = ("local", "shared")
# The hub's cap on page_size: all() and a large find() walk pages of this size.
PAGE_SIZE = 500
# What makes an operation answer False, None or [] (logged) rather than raise, as the protocol's other
# backends do: the hub's refusals and failures, and a uid or key no request can carry (empty, or a
# uid holding '/': the client refuses those with InvalidArgument, a ValueError, before sending anything).
_REFUSED = (MemoryHubError, ValueError)


@dataclass
class BackendEntry:
    """The protocol's entry: `etype` is the hub's kind, times are Unix seconds."""

    key: str
    value: str
    uid: str
    etype: str = DEFAULT_KIND
    created: float = 0
    updated: float = 0
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        now = time.time()
        if not self.created:
            self.created = now
        if not self.updated:
            self.updated = now

    @classmethod
    def from_entry(cls, entry: Entry) -> BackendEntry:
        return cls(
            key=entry.key,
            value=entry.value,
            uid=entry.uid,
            etype=entry.kind,
            created=entry.created.timestamp(),
            updated=entry.updated.timestamp(),
            meta=dict(entry.meta),
        )


class HubBackend:
    """A Backend whose entries live in a MemoryHub, under the account of `token`.

    Give either the hub's address and token (defaults: $MEMORYHUB_URL, $MEMORYHUB_TOKEN) or a
    MemoryHub to share. As the protocol's local backend: put replaces value, kind (meta["type"],
    else "preference") and meta; find matches key or value as a substring, any case, newest first;
    rm of a memory that is not there is True.

    privacy is the hub's privacy class of every put, chosen once for the backend so that put keeps
    the protocol's signature: "local" (the entry never leaves the hub: not mirrored to Honcho, never
    sent to a remote embeddings endpoint), "shared", or None (a new entry takes the account's
    default, an existing one keeps its own). A backend that writes local entries is no cloud for
    sync's sake (see `cloud`).
    """

    def __init__(
        self,
        base_url: str | None = None,
        token: str | None = None,
        *,
        hub: MemoryHub | None = None,
        timeout: float = _core.DEFAULT_TIMEOUT,
        privacy: str | None = None,
    ) -> None:
        if privacy is not None and privacy not in PRIVACY_CLASSES:
            raise ValueError(f"privacy must be one of {', '.join(PRIVACY_CLASSES)} or None; got {privacy!r}")
        self._hub = hub if hub is not None else MemoryHub(base_url, token, timeout=timeout)
        self._privacy = privacy
        self._cloud: bool | None = None

    @property
    def privacy(self) -> str | None:
        """The privacy class every put names (None: the account's default for a new entry)."""
        return self._privacy

    @property
    def hub(self) -> MemoryHub:
        return self._hub

    def ok(self) -> bool:
        """Whether the hub answers this token."""
        try:
            self._hub.info()
        except _REFUSED as error:
            logger.warning("memoryhub ok: %s", error)
            return False
        return True

    def put(self, uid: str, k: str, v: str, meta: dict[str, Any] | None = None) -> bool:
        """True once stored; False when the hub did not store it: refused, out of reach, or held for review by
        its write guard (WriteHeld: stored only if staff approve it). The reason is logged."""
        try:
            self._hub.put(
                uid, k, v, kind=(meta or {}).get("type", DEFAULT_KIND), meta=meta or {}, privacy=self._privacy
            )
        except _REFUSED as error:
            logger.warning("memoryhub put %s/%s: %s", uid, k, error)
            return False
        return True

    def get(self, uid: str, k: str) -> BackendEntry | None:
        try:
            if "/" in k:
                # Such a key cannot travel in a path: look for it among the substring matches.
                found = next(
                    (entry for entry in self._hub.entries(uid, q=k, match="substring") if entry.key == k), None
                )
                return BackendEntry.from_entry(found) if found else None
            return BackendEntry.from_entry(self._hub.get(uid, k))
        except NotFound:
            return None
        except _REFUSED as error:
            logger.warning("memoryhub get %s/%s: %s", uid, k, error)
            return None

    def find(self, uid: str, q: str, n: int = 10) -> list[BackendEntry]:
        if n < 1:
            return []
        try:
            page = self._hub.entries(uid, q=q or None, match="substring" if q else None, page_size=min(n, PAGE_SIZE))
            return [BackendEntry.from_entry(entry) for entry in islice(page, n)]
        except NotFound:
            return []
        except _REFUSED as error:
            logger.warning("memoryhub find %s: %s", uid, error)
            return []

    def all(self, uid: str) -> list[BackendEntry]:
        try:
            return [BackendEntry.from_entry(entry) for entry in self._hub.entries(uid, page_size=PAGE_SIZE)]
        except _REFUSED as error:
            logger.warning("memoryhub all %s: %s", uid, error)
            return []

    def rm(self, uid: str, k: str) -> bool:
        try:
            if "/" in k:
                # The batch takes the key in its body.
                self._hub.batch(uid, [BatchOperation.delete(k)])
            else:
                self._hub.delete(uid, k)
        except NotFound:
            return True
        except _REFUSED as error:
            logger.warning("memoryhub rm %s/%s: %s", uid, k, error)
            return False
        return True

    @property
    def name(self) -> str:
        return "memoryhub"

    @property
    def cloud(self) -> bool:
        """Whether entries reach a cloud: the hub's backend is one, or the hub mirrors to Honcho (which it never
        does with the local entries a backend of privacy "local" writes).

        Asked of the hub once; a hub that cannot say is taken as a cloud (privacy is not assumed).
        """
        if self._cloud is None:
            try:
                info = self._hub.info()
            except _REFUSED as error:
                logger.warning("memoryhub cloud: %s", error)
                return True
            mirrored = bool(info.sync.get("enabled")) and self._privacy != "local"
            self._cloud = info.cloud or mirrored
        return self._cloud

    def close(self) -> None:
        self._hub.close()
