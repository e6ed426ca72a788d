"""Honcho, through the official honcho-ai SDK: the only module in the hub that talks to it.

The mapping (../shared/honcho/MAPPING.md, which held up against a real Honcho 3.0 server):

- one Honcho peer per (owner, uid), its id `mh-o<owner>-u-<uid>`, or `mh-o<owner>-h-<sha256>` for a
  uid that Honcho's id pattern refuses; entries of different accounts never share a peer;
- one Honcho session per entry, with an id made once (`new_session_id`) and never derived from the
  key: after a delete the old id answers 404 until Honcho purges it;
- the session's metadata is the whole record (owner, uid, key, kind, value, meta as a JSON string,
  created, updated, version, value hash), so get, list and find are `sessions/list` with filters;
- each new value is also a message by the user's peer ("key: value"), which is what Honcho's own
  search and reasoning read; a value whose hash the newest message already carries is not
  written again, so a replayed upsert writes no second message.

Two layers. `HonchoStore` speaks in whole records of any account (what a sync worker needs:
upsert by identity with version, delete, fetch, records, search, and `max_retries=0` so that the caller owns
retrying). `HonchoBackend` is the MemoryBackend protocol over it, bound to one account.

Every SDK error becomes one BackendError; `retryable` is True for timeouts, connection errors,
429 and 5xx, False for 400, 401, 403, 404, 409 and 422.
"""

import contextlib
import hashlib
import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import honcho as honcho_sdk
import httpx
import pydantic
from django.contrib.auth.models import User
from django.utils import timezone

from memories.backends.base import DEFAULT_FIND_LIMIT, Availability, BackendEntry, BackendError, MemoryBackend
from memories.backends.honcho_config import HonchoConfig
from memories.models import DEFAULT_KIND

HONCHO_ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]+$")
HONCHO_ID_MAX_LENGTH = 512
MESSAGE_MAX_CHARS = 25_000
PAGE_SIZE = 100
METADATA_SCHEMA = 1


@dataclass(frozen=True)
class HonchoRecord:
    """An entry as its Honcho session's metadata holds it, with the account it belongs to."""

    owner_id: int
    uid: str
    key: str
    value: str
    kind: str = DEFAULT_KIND
    meta: dict[str, Any] = field(default_factory=dict)
    created: datetime | None = None
    updated: datetime | None = None
    version: int = 1

    @property
    def value_hash(self) -> str:
        return value_hash(self.value)

    def as_entry(self) -> BackendEntry:
        return BackendEntry(
            uid=self.uid,
            key=self.key,
            value=self.value,
            kind=self.kind,
            meta=self.meta,
            created=self.created,
            updated=self.updated,
            version=self.version,
        )


@dataclass(frozen=True)
class RemoteEntry:
    """A record found in Honcho, and the session that holds it."""

    session_id: str
    record: HonchoRecord


@dataclass(frozen=True)
class UpsertOutcome:
    session_id: str
    message_written: bool


def value_hash(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:32]


def new_session_id() -> str:
    """A fresh Honcho session id for one entry: make it once, when the entry is created, and keep it."""
    return f"mh-{uuid.uuid4().hex}"


def peer_id(owner_id: int, uid: str) -> str:
    """The Honcho peer of one account's user: readable when the uid is a valid Honcho id, hashed otherwise."""
    readable = f"mh-o{owner_id}-u-{uid}"
    if HONCHO_ID_PATTERN.match(uid) and len(readable) <= HONCHO_ID_MAX_LENGTH:
        return readable
    return f"mh-o{owner_id}-h-{hashlib.sha256(uid.encode('utf-8')).hexdigest()}"


def _timestamp(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _parse_timestamp(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def record_metadata(record: HonchoRecord) -> dict[str, Any]:
    """The session metadata that holds a record. meta travels as a JSON string: Honcho refuses
    metadata nested deeper than 5 levels, and an entry's meta may nest to 20."""
    return {
        "mh": METADATA_SCHEMA,
        "mh_owner": str(record.owner_id),
        "mh_uid": record.uid,
        "mh_key": record.key,
        "mh_kind": record.kind,
        "mh_value": record.value,
        "mh_meta": json.dumps(record.meta, ensure_ascii=False, separators=(",", ":")),
        "mh_created": _timestamp(record.created),
        "mh_updated": _timestamp(record.updated),
        "mh_version": record.version,
        "mh_hash": record.value_hash,
    }


def record_from_metadata(metadata: dict[str, Any] | None) -> HonchoRecord | None:
    """The record a session's metadata holds, or None for a session the hub did not write."""
    if not metadata or metadata.get("mh") != METADATA_SCHEMA:
        return None
    try:
        meta = json.loads(metadata.get("mh_meta") or "{}")
        return HonchoRecord(
            owner_id=int(metadata["mh_owner"]),
            uid=str(metadata["mh_uid"]),
            key=str(metadata["mh_key"]),
            value=str(metadata["mh_value"]),
            kind=str(metadata.get("mh_kind") or DEFAULT_KIND),
            meta=meta if isinstance(meta, dict) else {},
            created=_parse_timestamp(metadata.get("mh_created")),
            updated=_parse_timestamp(metadata.get("mh_updated")),
            version=int(metadata.get("mh_version") or 1),
        )
    except (KeyError, TypeError, ValueError):
        return None


class HonchoStore:
    """Records of any account in one Honcho workspace, through the SDK.

    max_retries: the SDK's own retries (it retries POSTs too). Leave it at 0 where the caller
    retries, as a sync worker does, or a retried write may land twice. http_client: an httpx
    client to use instead of the SDK's own (tests pass the Honcho double's). One store per thread.
    """

    def __init__(
        self,
        config: HonchoConfig | None = None,
        *,
        max_retries: int = 0,
        http_client: httpx.Client | None = None,
    ) -> None:
        self.config = config or HonchoConfig.from_settings()
        self._ensured_peers: set[str] = set()
        # The store owns its connection pool (and closes it) unless the caller brought one.
        self._own_http_client = http_client is None
        self._http_client = http_client or httpx.Client(
            base_url=self.config.base_url, timeout=httpx.Timeout(self.config.timeout)
        )
        self._client = honcho_sdk.Honcho(
            api_key=self.config.api_key or None,
            base_url=self.config.base_url,
            workspace_id=self.config.workspace_id,
            timeout=self.config.timeout,
            max_retries=max_retries,
            http_client=self._http_client,
        )

    # Errors ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _sdk_errors(self, action: str) -> Iterator[None]:
        """Turn whatever the SDK raises while doing `action` into one BackendError."""
        where = f"Honcho at {self.config.base_url}"
        try:
            yield
        except honcho_sdk.AuthenticationError as error:
            raise BackendError(
                f"{where} refused the API key (401) while {action}: {error.message}", retryable=False, status=401
            ) from error
        except honcho_sdk.PermissionDeniedError as error:
            raise BackendError(
                f"{where} denied access (403) while {action}: {error.message}", retryable=False, status=403
            ) from error
        except honcho_sdk.RateLimitError as error:
            raise BackendError(
                f"{where} is rate limiting (429) while {action}",
                retryable=True,
                status=429,
                retry_after=error.retry_after,
            ) from error
        except honcho_sdk.ServerError as error:
            raise BackendError(
                f"{where} failed ({error.status}) while {action}: {error.message}", retryable=True, status=error.status
            ) from error
        except honcho_sdk.TimeoutError as error:
            raise BackendError(
                f"{where} did not answer within {self.config.timeout:g} s while {action}", retryable=True
            ) from error
        except honcho_sdk.ConnectionError as error:
            raise BackendError(f"could not reach {where} while {action}: {error.message}", retryable=True) from error
        except honcho_sdk.APIError as error:
            raise BackendError(
                f"{where} refused the request ({error.status}) while {action}: {error.message}",
                retryable=False,
                status=error.status,
            ) from error
        except honcho_sdk.HonchoError as error:
            raise BackendError(
                f"{where} failed while {action}: {error.message}", retryable=False, status=error.status
            ) from error
        except pydantic.ValidationError as error:
            raise BackendError(
                f"{where} answered in an unexpected shape while {action}: {error}", retryable=False
            ) from error

    # Operations -------------------------------------------------------------------------------

    def ping(self) -> None:
        """One round trip (the workspace, fetched or created). Raises BackendError."""
        with self._sdk_errors("fetching the workspace"):
            self._client.get_metadata()

    def _ensure_peer(self, peer: str) -> None:
        if peer in self._ensured_peers:
            return
        with self._sdk_errors("creating the peer"):
            self._client.peer(peer)
        self._ensured_peers.add(peer)

    def upsert(self, record: HonchoRecord, *, session_id: str | None = None) -> UpsertOutcome:
        """Make Honcho hold `record`: the session's metadata replaced, a message added for a new value.

        session_id: the entry's stored session id. Without one, the record's session is looked up
        by identity, and a new one made when there is none. Safe to replay.
        """
        if session_id is None:
            found = self.fetch(record.owner_id, record.uid, record.key)
            session_id = found.session_id if found else new_session_id()
        peer = peer_id(record.owner_id, record.uid)
        self._ensure_peer(peer)
        with self._sdk_errors("writing the entry's session"):
            peers: list[honcho_sdk.PeerBase | str] = [peer]
            session = self._client.session(session_id, metadata=record_metadata(record), peers=peers)
        with self._sdk_errors("reading the session's newest message"):
            newest = session.messages(reverse=True, size=1).items
        if newest and newest[0].metadata.get("mh_hash") == record.value_hash:
            return UpsertOutcome(session_id=session_id, message_written=False)
        message = honcho_sdk.MessageCreateParams(
            content=f"{record.key}: {record.value}"[:MESSAGE_MAX_CHARS],
            peer_id=peer,
            metadata={"mh_key": record.key, "mh_hash": record.value_hash, "mh_version": record.version},
        )
        with self._sdk_errors("adding the value's message"):
            session.add_messages([message])
        return UpsertOutcome(session_id=session_id, message_written=True)

    def _sessions(self, filters: dict[str, Any], *, action: str, size: int = PAGE_SIZE) -> list[RemoteEntry]:
        found = []
        with self._sdk_errors(action):
            for session in self._client.sessions(filters=filters, size=size):
                record = record_from_metadata(session.metadata)
                if record is not None:
                    found.append(RemoteEntry(session_id=session.id, record=record))
        return found

    def fetch(self, owner_id: int, uid: str, key: str) -> RemoteEntry | None:
        """The record (owner, uid, key) and its session, or None."""
        filters: dict[str, object] = {"metadata": {"mh_owner": str(owner_id), "mh_uid": uid, "mh_key": key}}
        with self._sdk_errors("looking up the entry"):
            page = self._client.sessions(filters=filters, size=1)
        for session in page.items:
            record = record_from_metadata(session.metadata)
            if record is not None:
                return RemoteEntry(session_id=session.id, record=record)
        return None

    def records(self, owner_id: int, uid: str | None = None) -> list[RemoteEntry]:
        """Every record of the account (of one uid when given), newest first."""
        wanted: dict[str, Any] = {"mh_owner": str(owner_id)}
        if uid is not None:
            wanted["mh_uid"] = uid
        return _newest_first(self._sessions({"metadata": wanted}, action="listing entries"))

    def all_records(self) -> list[RemoteEntry]:
        """Every record the hub wrote in this workspace, of every account (for a reconciliation)."""
        return self._sessions({"metadata": {"mh": METADATA_SCHEMA}}, action="listing every entry")

    def search(self, owner_id: int, uid: str, query_text: str, limit: int = DEFAULT_FIND_LIMIT) -> list[RemoteEntry]:
        """uid's records whose key or value holds query_text, any case, newest first."""
        filters = {
            "AND": [
                {"metadata": {"mh_owner": str(owner_id), "mh_uid": uid}},
                {
                    "OR": [
                        {"metadata": {"mh_key": {"icontains": query_text}}},
                        {"metadata": {"mh_value": {"icontains": query_text}}},
                    ]
                },
            ]
        }
        return _newest_first(self._sessions(filters, action="finding entries"))[:limit]

    def delete_session(self, session_id: str) -> bool:
        """Delete one entry's session; False when Honcho had none (a 404: already gone)."""
        try:
            with self._sdk_errors("deleting the entry's session"):
                honcho_sdk.Session(session_id, self._client).delete()
        except BackendError as error:
            if error.status == 404:
                return False
            raise
        return True

    def delete(self, owner_id: int, uid: str, key: str, *, session_id: str | None = None) -> bool:
        """Delete the record (owner, uid, key); False when Honcho did not hold it."""
        if session_id is None:
            found = self.fetch(owner_id, uid, key)
            if found is None:
                return False
            session_id = found.session_id
        return self.delete_session(session_id)

    def close(self) -> None:
        if self._own_http_client:
            self._http_client.close()


def _newest_first(entries: list[RemoteEntry]) -> list[RemoteEntry]:
    oldest = datetime.min.replace(tzinfo=UTC)
    return sorted(entries, key=lambda found: (found.record.updated or oldest, found.record.version), reverse=True)


class HonchoBackend(MemoryBackend):
    """The owner's entries in Honcho. A put costs four round trips (look-up, session, newest
    message, message), a get or find one per page of 100. Everything leaves the machine unless
    HONCHO_URL is a server on loopback."""

    name = "honcho"

    def __init__(
        self,
        *,
        owner: User,
        config: HonchoConfig | None = None,
        max_retries: int = 0,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(owner=owner)
        self.config = config or HonchoConfig.from_settings()
        self.store = HonchoStore(self.config, max_retries=max_retries, http_client=http_client)

    @property
    def is_cloud(self) -> bool:  # type: ignore[override]
        return self.config.is_cloud

    def available(self) -> Availability:
        if not self.config.configured:
            return Availability(
                ok=False, reason="Honcho is not configured: set HONCHO_URL (self-hosted) or HONCHO_API_KEY (cloud)"
            )
        try:
            self.store.ping()
        except BackendError as error:
            return Availability(ok=False, reason=error.message)
        return Availability(
            ok=True, reason=f"Honcho at {self.config.base_url} answers (workspace {self.config.workspace_id})"
        )

    def put(
        self, uid: str, key: str, value: str, *, kind: str | None = None, meta: dict[str, Any] | None = None
    ) -> BackendEntry:
        found = self.store.fetch(self.owner.pk, uid, key)
        now = timezone.now()
        before = found.record if found else None
        record = HonchoRecord(
            owner_id=self.owner.pk,
            uid=uid,
            key=key,
            value=value,
            kind=kind if kind is not None else (before.kind if before else DEFAULT_KIND),
            meta=meta if meta is not None else (before.meta if before else {}),
            created=before.created if before and before.created else now,
            updated=now,
            version=before.version + 1 if before else 1,
        )
        self.store.upsert(record, session_id=found.session_id if found else new_session_id())
        return record.as_entry()

    def get(self, uid: str, key: str) -> BackendEntry | None:
        found = self.store.fetch(self.owner.pk, uid, key)
        return found.record.as_entry() if found else None

    def find(self, uid: str, query_text: str, limit: int = DEFAULT_FIND_LIMIT) -> list[BackendEntry]:
        return [found.record.as_entry() for found in self.store.search(self.owner.pk, uid, query_text, limit)]

    def list(self, uid: str) -> list[BackendEntry]:
        return [found.record.as_entry() for found in self.store.records(self.owner.pk, uid)]

    def delete(self, uid: str, key: str) -> bool:
        return self.store.delete(self.owner.pk, uid, key)

    def close(self) -> None:
        self.store.close()
