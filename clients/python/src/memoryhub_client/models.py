"""What the hub answers, as typed dataclasses. Fields the hub adds later are ignored, not errors."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

T = TypeVar("T")

__all__ = [
    "BatchOperation",
    "BatchOutcome",
    "Context",
    "ContextEntry",
    "Entry",
    "EvaluationRun",
    "Event",
    "HeldWrite",
    "Info",
    "PageData",
    "SyncStatus",
    "UserSummary",
]


def parse_time(text: str | None) -> datetime | None:
    """An ISO 8601 time from the hub."""
    return datetime.fromisoformat(text) if text else None


def _required_time(text: str) -> datetime:
    parsed = parse_time(text)
    if parsed is None:
        raise ValueError("a time was expected")
    return parsed


# What a search result says of its ranking, beside the memory itself.
_RANKING_FIELDS = ("score", "lexical_rank", "semantic_similarity", "relevant")


@dataclass(frozen=True)
class Entry:
    """One memory. `etag` is what If-Match wants to see to change exactly this version: the hub's
    ETag header where the answer had one (get, put, update, restore), else made from the version."""

    uid: str
    key: str
    value: str
    kind: str
    meta: dict[str, Any]
    version: int
    created: datetime
    updated: datetime
    # "local": never leaves the hub (not synced, never sent to a remote embeddings endpoint); "shared".
    privacy: str = "shared"
    # When the memory expires (then no read shows it); None: never.
    expires: datetime | None = None
    # On search results (?q=), when the hub reports them: the ranking's score (higher is better,
    # comparable within one query) and the query's terms the entry holds.
    score: float | None = None
    matched_terms: tuple[str, ...] = ()
    etag: str = ""
    # Also on search results: its place in the word ranking (1 is first), the cosine similarity of its
    # meaning to the query's (both None where that side did not find it, or the search was by words
    # alone), and whether it passes the hub's relevance cut-off (None when the search was by words
    # alone): when no result of a search is relevant, most likely no memory answers it.
    lexical_rank: int | None = None
    semantic_similarity: float | None = None
    relevant: bool | None = None
    # The write guard's rules the value broke (the account's guard mode "flag" stores it marked).
    guard_flags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.etag:
            object.__setattr__(self, "etag", f'"{self.version}"')

    @classmethod
    def from_json(cls, data: dict[str, Any], *, etag: str | None = None) -> Entry:
        score, rank, similarity, relevant = (data.get(name) for name in _RANKING_FIELDS)
        return cls(
            uid=data["uid"],
            key=data["key"],
            value=data["value"],
            kind=data["kind"],
            meta=data.get("meta") or {},
            version=int(data["version"]),
            created=_required_time(data["created"]),
            updated=_required_time(data["updated"]),
            privacy=data.get("privacy", "shared"),
            expires=_required_time(data["expires"]) if data.get("expires") else None,
            score=float(score) if isinstance(score, int | float) else None,
            matched_terms=tuple(data.get("matched_terms") or ()),
            etag=etag or "",
            lexical_rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
            semantic_similarity=float(similarity) if isinstance(similarity, int | float) else None,
            relevant=relevant if isinstance(relevant, bool) else None,
            guard_flags=tuple(data.get("guard_flags") or ()),
        )


@dataclass(frozen=True)
class Event:
    """One change in a memory's history: create, update or delete, with before and after."""

    action: str
    version: int
    value_before: str | None
    value_after: str | None
    kind_before: str | None
    kind_after: str | None
    meta_before: dict[str, Any] | None
    meta_after: dict[str, Any] | None
    actor: str | None
    at: datetime
    privacy_before: str | None = None
    privacy_after: str | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Event:
        return cls(
            action=data["action"],
            version=int(data["version"]),
            value_before=data.get("value_before"),
            value_after=data.get("value_after"),
            kind_before=data.get("kind_before"),
            kind_after=data.get("kind_after"),
            meta_before=data.get("meta_before"),
            meta_after=data.get("meta_after"),
            actor=data.get("actor"),
            at=_required_time(data["at"]),
            privacy_before=data.get("privacy_before"),
            privacy_after=data.get("privacy_after"),
        )


@dataclass(frozen=True)
class UserSummary:
    """A uid the account holds memories about."""

    uid: str
    entries: int
    last_updated: datetime | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> UserSummary:
        return cls(uid=data["uid"], entries=int(data["entries"]), last_updated=parse_time(data.get("last_updated")))


@dataclass(frozen=True)
class BatchOperation:
    """One put or delete of a batch; build them with BatchOperation.put(...) and BatchOperation.delete(...)."""

    op: str
    key: str
    value: str | None = None
    kind: str | None = None
    meta: dict[str, Any] | None = None
    expected_version: int | None = None
    privacy: str | None = None

    @classmethod
    def put(
        cls,
        key: str,
        value: str,
        *,
        kind: str | None = None,
        meta: dict[str, Any] | None = None,
        expected_version: int | None = None,
        privacy: str | None = None,
    ) -> BatchOperation:
        return cls(
            op="put", key=key, value=value, kind=kind, meta=meta, expected_version=expected_version, privacy=privacy
        )

    @classmethod
    def delete(cls, key: str, *, expected_version: int | None = None) -> BatchOperation:
        return cls(op="delete", key=key, expected_version=expected_version)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"op": self.op, "key": self.key}
        for name in ("value", "kind", "meta", "expected_version", "privacy"):
            if getattr(self, name) is not None:
                body[name] = getattr(self, name)
        return body


@dataclass(frozen=True)
class HeldWrite:
    """A write the hub's write guard held for review (the account's guard mode is hold): nothing is
    stored until staff approve it. `id` is its number at /api/v1/held/{id}; `guard_flags` the rules the
    value broke; `status` pending, approved or rejected. kind and meta are None where the write left them out.
    """

    id: int
    uid: str
    key: str
    value: str
    kind: str | None
    meta: dict[str, Any] | None
    guard_flags: tuple[str, ...]
    status: str
    requested_at: datetime
    # The version the write named (if_match; 0: create only): it is approved only while the memory is at it.
    expected_version: int | None = None
    # The privacy it asked for (for a new memory that named none, the account's default when written; None: the
    # memory's own), and the expiry: ttl seconds after approval, an expires time, or clears_expiry (none).
    privacy: str | None = None
    ttl: int | None = None
    expires: datetime | None = None
    clears_expiry: bool = False
    # Who asked and who decided, when (None while pending), and the memory's version the approval stored.
    requested_by: str | None = None
    decided_by: str | None = None
    decided_at: datetime | None = None
    entry_version: int | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HeldWrite:
        expected, ttl, stored = data.get("expected_version"), data.get("ttl"), data.get("entry_version")
        return cls(
            id=int(data["id"]),
            uid=data["uid"],
            key=data["key"],
            value=data["value"],
            kind=data.get("kind"),
            meta=data.get("meta"),
            guard_flags=tuple(data.get("guard_flags") or ()),
            status=data["status"],
            requested_at=_required_time(data["requested_at"]),
            expected_version=int(expected) if expected is not None else None,
            privacy=data.get("privacy"),
            ttl=int(ttl) if ttl is not None else None,
            expires=parse_time(data.get("expires")),
            clears_expiry=bool(data.get("clears_expiry", False)),
            requested_by=data.get("requested_by"),
            decided_by=data.get("decided_by"),
            decided_at=parse_time(data.get("decided_at")),
            entry_version=int(stored) if stored is not None else None,
        )


@dataclass(frozen=True)
class BatchOutcome:
    """What one operation of a batch did: created, updated, unchanged, deleted, absent, or held (the write
    guard held the put for review: `held` is the held write, and `entry` is None)."""

    op: str
    key: str
    status: str
    entry: Entry | None
    held: HeldWrite | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BatchOutcome:
        entry, held = data.get("entry"), data.get("held")
        return cls(
            op=data["op"],
            key=data["key"],
            status=data["status"],
            entry=Entry.from_json(entry) if entry else None,
            held=HeldWrite.from_json(held) if held else None,
        )


@dataclass(frozen=True)
class Info:
    """The hub's backend, the account's counts, sync in short, who embeds, and the hub's version."""

    backend: str
    cloud: bool
    available: bool
    reason: str
    entries: int
    users: int
    sync: dict[str, Any]
    version: str
    # Who embeds for the search by meaning: "local", "openai" or "off" ("" from a hub that does not say).
    embeddings: str = ""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Info:
        counts = data.get("counts") or {}
        return cls(
            backend=data["backend"],
            cloud=bool(data["cloud"]),
            available=bool(data["available"]),
            reason=data.get("reason", ""),
            entries=int(counts.get("entries", 0)),
            users=int(counts.get("users", 0)),
            sync=data.get("sync") or {},
            version=str(data.get("version", "")),
            embeddings=str(data.get("embeddings", "")),
        )


@dataclass(frozen=True)
class SyncStatus:
    """Mirroring to Honcho: what waits, what failed, and when it last worked."""

    enabled: bool
    scope: str
    pending: int
    failed: int
    oldest_pending_seconds: float | None
    last_success: datetime | None
    last_error: str
    last_error_at: datetime | None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SyncStatus:
        return cls(
            enabled=bool(data["enabled"]),
            scope=data.get("scope", "account"),
            pending=int(data.get("pending", 0)),
            failed=int(data.get("failed", 0)),
            oldest_pending_seconds=data.get("oldest_pending_seconds"),
            last_success=parse_time(data.get("last_success")),
            last_error=data.get("last_error") or "",
            last_error_at=parse_time(data.get("last_error_at")),
        )


@dataclass(frozen=True)
class EvaluationRun:
    """A stored evaluation: each backend's grade (`results`, as `manage.py evaluate --json`) and the advice."""

    id: int
    started: datetime | None
    finished: datetime | None
    ops: int
    recommendation: str
    requested_by: str | None
    results: list[dict[str, Any]]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EvaluationRun:
        return cls(
            id=int(data["id"]),
            started=parse_time(data.get("started")),
            finished=parse_time(data.get("finished")),
            ops=int(data.get("ops", 0)),
            recommendation=data.get("recommendation", ""),
            requested_by=data.get("requested_by"),
            results=list(data.get("results") or []),
        )


@dataclass(frozen=True)
class ContextEntry:
    """A memory a context block shows, and why: "relevant" (found by q and judged relevant), "nearest" (found
    by q and put first, but not judged relevant: most likely nothing answers q) or "recent" (among the newest).
    A later hub may send another reason: `reason` is the hub's text as sent."""

    key: str
    kind: str
    version: int
    updated: datetime
    reason: str

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ContextEntry:
        return cls(
            key=data["key"],
            kind=data["kind"],
            version=int(data["version"]),
            updated=_required_time(data["updated"]),
            reason=data.get("reason", ""),
        )


@dataclass(frozen=True)
class Context:
    """The prompt-ready block of what an agent should know about a user this turn, and the memories in it.

    `text` never holds more than `budget` characters nor a memory cut mid-way (format
    memoryhub-context/2: a header line, then `- key (kind): value` per memory). `total` is how many
    memories the user has. Pass this Context back as `previous` and the hub answers 304 (this same
    object comes back) until a write, a new ranking or an expiry would change the block.
    """

    uid: str
    budget: int
    query: str
    text: str
    length: int
    total: int
    entries: list[ContextEntry]
    etag: str | None

    @classmethod
    def from_json(cls, data: dict[str, Any], *, etag: str | None) -> Context:
        return cls(
            uid=data["uid"],
            budget=int(data["budget"]),
            query=data.get("query", ""),
            text=data["text"],
            length=int(data.get("length", len(data["text"]))),
            total=int(data.get("total", 0)),
            entries=[ContextEntry.from_json(item) for item in data.get("entries") or []],
            etag=etag,
        )


@dataclass(frozen=True)
class PageData(Generic[T]):
    """One page as the hub sent it; the clients wrap it into Page / AsyncPage, which can fetch the next."""

    items: list[T]
    count: int
    count_exact: bool
    number: int
    has_next: bool
    # The order of this page's items ("relevance" or "newest"), and for a search how it ranked (the hub's
    # X-MemoryHub-Ranking: "hybrid", or "lexical; semantic ..." saying why the meaning took no part); None else.
    order: str | None = None
    ranking: str | None = None

    @classmethod
    def from_json(
        cls,
        data: dict[str, Any],
        *,
        number: int,
        item: Callable[[dict[str, Any]], T],
        ranking: str | None = None,
    ) -> PageData[T]:
        return cls(
            items=[item(row) for row in data.get("results", [])],
            count=int(data.get("count", 0)),
            count_exact=bool(data.get("count_exact", True)),
            number=number,
            has_next=data.get("next") is not None,
            order=data.get("order"),
            ranking=ranking,
        )
