"""Single entries: put, update, delete, restore, expiry, and forgetting (or erasing) a user.

Each function is one transaction that writes the entry, its history (MemoryEvent), when sync is
on its sync task, and when its text changed the mark that its vector is wanted again. (A put standing
alone on PostgreSQL needs no transaction of its own: one statement creates a key, two change it, each
atomic by itself: _put_unlocked.) A local entry
(privacy `local`) gets no sync task; one made local has its Honcho session deleted and any remote
vector of it dropped.

An entry whose expiry has passed is gone for every write as for every read: a put creates the key
anew (the expired row is recorded as expired and removed first, so the version goes on), an update
or a delete finds nothing. The worker removes the rest (entries_expire).
"""

import functools
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Literal, TypeVar

from django.conf import settings
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from memories import outbox
from memories.embeddings.store import WANTED_AGAIN, embedding_mark_stale, embedding_wanted_row, embedding_withdraw
from memories.models import (
    DEFAULT_KIND,
    EVENT_VERSION_ONCE,
    PROBE_UID,
    PROBE_USERNAME,
    HeldWrite,
    MemoryEntry,
    MemoryEvent,
    Privacy,
    SyncTask,
    new_honcho_session_id,
)
from memories.rows import (
    Computed,
    Following,
    PreparedWrite,
    entry_columns,
    entry_from_row,
    quote,
    row_insert_else_read,
    row_insert_prepare,
    row_update,
)
from memories.selectors import account_policy
from memories.services.guarding import (
    KEEPS_EXPIRY,
    GuardDecision,
    HeldExpiry,
    WriteHeld,
    guard_decide,
    held_write_new,
)
from memories.validation import check_key, check_kind, check_meta, check_privacy, check_uid, check_value, expiry_from


class EntryNotFound(LookupError):
    """No entry with that uid and key belongs to the account."""


# The columns of the unique constraint memory_entry_unique_owner_uid_key: one entry per (owner, uid, key).
ENTRY_IDENTITY_COLUMNS = ("owner_id", "uid", "key")
# The expected_version that asks for an entry that does not exist yet: a create-only write.
ABSENT_VERSION = 0
# The most expired entries one call of entries_expire removes (one transaction).
EXPIRY_BATCH = 500


class Keep(Enum):
    """A field a write leaves out: the entry keeps what it has (None would clear it)."""

    KEEP = "keep"


KEEP = Keep.KEEP
Expires = datetime | None | Literal[Keep.KEEP]


class VersionConflict(Exception):
    """The entry's version is not the one the caller expected (If-Match).

    current is the entry's version (ABSENT_VERSION when there is none); for a restore, deleted_at is
    the version the entry was deleted at, which is what a restore's expected_version names.
    """

    def __init__(self, current: int | None, *, deleted_at: int | None = None) -> None:
        if deleted_at is not None:
            message = f"it was deleted at version {deleted_at}"
        else:
            message = f"current version is {current}" if current else "the entry does not exist"
        super().__init__(message)
        self.current = current
        self.deleted_at = deleted_at


@dataclass(frozen=True)
class PutResult:
    entry: MemoryEntry
    created: bool
    changed: bool


def _locked_entry(*, owner: User, uid: str, key: str, now: datetime | None = None) -> MemoryEntry | None:
    """The entry, locked for the rest of the caller's transaction (SQLite has no row locks: its IMMEDIATE
    transactions, settings.SQLITE_OPTIONS, hold the write lock from BEGIN); an entry whose expiry has passed is
    recorded as expired and removed, and None returned. One query on the unique (owner, uid, key)."""
    row = _entry_read(owner_id=owner.pk, uid=uid, key=key, locked=True)
    if row is None:
        return None
    entry = entry_from_row(row)
    moment = now or timezone.now()
    if entry.expired(moment):
        entries_expired_remove([entry], at=moment)
        return None
    return entry


# How many times a put tries to create its entry while concurrent writers create and remove the same key.
CREATE_ATTEMPTS = 10
Written = TypeVar("Written")


# How SQLite words a refusal by EVENT_VERSION_ONCE: by its columns, not its name.
_SQLITE_VERSION_TAKEN = "UNIQUE constraint failed: " + ", ".join(
    f"{MemoryEvent._meta.db_table}.{column}" for column in ("owner_id", "uid", "key", "version")
)


def version_taken(error: IntegrityError) -> bool:
    """Whether error is a create or update refused because its version was taken meanwhile (EVENT_VERSION_ONCE).

    On PostgreSQL a new entry's version is worked out as its INSERT begins; when that INSERT then waits for a
    concurrent transaction's entry of the same key, and that transaction removes the entry before it commits (a
    batch that creates and deletes the key), the INSERT goes on with a version the other used. The index refuses
    its event, the statement writes nothing, and the put is written again, reading the history anew."""
    message = str(error)
    return EVENT_VERSION_ONCE in message or message.startswith(_SQLITE_VERSION_TAKEN)


def _written_again_while_version_taken(write: Callable[[], Written]) -> Written:
    """write(), which writes in a transaction of its own: done again, from the history as it then stands, while a
    concurrent writer took the version it worked out (version_taken; rolled back whole each time), up to
    CREATE_ATTEMPTS times. Inside a caller's transaction, once: such an error fails that transaction whole, as
    any would."""
    if connection.in_atomic_block:
        return write()
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        try:
            return write()
        except IntegrityError as error:
            if attempt == CREATE_ATTEMPTS or not version_taken(error):
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")


def _expiry(*, expires: object, ttl: object, now: datetime) -> Expires:
    """What a write sets the expiry to: from ttl or expires (checked), None to clear it, KEEP when neither is given."""
    if ttl is None and expires is KEEP:
        return KEEP
    return expiry_from(expires=None if expires is KEEP else expires, ttl=ttl, now=now)


def held_expiry(*, ttl: object, expires: object) -> HeldExpiry:
    """The expiry a write asked for, as a held write keeps it until approval: ttl and expires checked already."""
    if ttl is not None:
        assert isinstance(ttl, int)
        return HeldExpiry(ttl=ttl)
    if expires is KEEP:
        return HeldExpiry()
    if expires is None:
        return HeldExpiry(clears=True)
    assert isinstance(expires, datetime)
    return HeldExpiry(expires=expires)


@functools.cache
def _next_version_sql() -> str:
    """The version a key's new entry starts at, as SQL (parameters: owner id, uid, key): the one after its
    history's latest (_last_version), 1 when it has none."""
    event_table = quote(MemoryEvent._meta.db_table)
    identity = f"{quote('owner_id')} = %s AND {quote('uid')} = %s AND {quote('key')} = %s"
    return (
        f"COALESCE((SELECT {quote('version')} FROM {event_table} WHERE {identity} "
        f"ORDER BY {quote('id')} DESC LIMIT 1), {ABSENT_VERSION}) + 1"
    )


def _created_else_read(entry: MemoryEntry, *, actor: User | None) -> tuple | None:
    """PostgreSQL: insert a new entry (its version worked out here) with its "create" event and pending vector
    row, in one statement that also reads the version its key's history goes on from and, when the key has an
    entry already, that entry's row. None when the entry was inserted; else the row of the entry there (as
    entry_columns reads it), all None when a concurrent writer's came first and is not visible yet.

    The entry is inserted only when the key had none as the statement began, so the history read then is the
    key's whole history: when another transaction is removing the key's entry (a batch that changes and
    deletes it, say), the put does not wait for it to insert with a version that transaction is using, but
    goes on to change the entry read, which fails once it is gone, and the locked path reads the history
    again.

    A key that has an entry costs its sequence a number (ON CONFLICT takes it before it finds the conflict)."""
    identity = (entry.owner_id, entry.uid, entry.key)
    return row_insert_else_read(
        entry,
        unless_conflict_on=ENTRY_IDENTITY_COLUMNS,
        following=_creation_following(entry, actor=actor),
        computed=Computed("version", _next_version_sql(), identity),
        read=_entry_read_sql(connection.vendor),
        read_params=identity,
    )


def _creation_following(entry: MemoryEntry, *, actor: User | None) -> list[Following]:
    """The rows a new entry whose version the database works out (_next_version_sql) is written with: its
    "create" event and, when vectors are wanted, its pending vector row, each taking that version."""
    following = [
        Following(
            _event(entry, action=MemoryEvent.Action.CREATE, actor=actor, before=None), takes=(("version", "version"),)
        )
    ]
    wanted = embedding_wanted_row(entry)
    if wanted is not None:
        following.append(Following(wanted, takes_key="entry", takes=(("wanted_version", "version"),)))
    return following


def _creation_prepare(entry: MemoryEntry, *, actor: User | None) -> PreparedWrite:
    """A new entry's INSERT, ON CONFLICT DO NOTHING (a concurrent writer may insert the same key first on
    PostgreSQL, where a row that does not exist yet cannot be locked: no error to roll back, no savepoint), its
    version worked out as it is inserted, and its create event and vector mark after it (on PostgreSQL in the
    same statement), prepared to run: SQLite's puts prepare it before taking the write lock, so the lock is
    held for the statements alone (memoryhub/sqlite/base.py: the other worker's writes wait that long)."""
    return row_insert_prepare(
        entry,
        unless_conflict_on=ENTRY_IDENTITY_COLUMNS,
        following=_creation_following(entry, actor=actor),
        computed=Computed("version", _next_version_sql(), (entry.owner_id, entry.uid, entry.key)),
    )


def _created(entry: MemoryEntry, *, actor: User | None) -> bool:
    """Insert a new entry with its create event and vector mark (_creation_prepare); False, inserting nothing,
    when a concurrent writer's entry of the same key came first."""
    return _creation_prepare(entry, actor=actor).run()


@functools.cache
def _entry_read_sql(vendor: str, *, locked: bool = False) -> str:
    """The entry (owner, uid, key) (parameters: owner id, uid, key), locked where the database locks rows when
    asked."""
    identity = f"{quote('owner_id')} = %s AND {quote('uid')} = %s AND {quote('key')} = %s"
    lock = " FOR UPDATE" if locked and connection.features.has_select_for_update else ""
    table = quote(MemoryEntry._meta.db_table)
    return f"SELECT {entry_columns('found')} FROM {table} AS found WHERE {identity}{lock}"


def _last_version(*, owner: User, uid: str, key: str) -> int:
    """The version of the latest change in the history of (uid, key), ABSENT_VERSION when it has none.

    One query on the index memory_event_entry_history. A re-created entry goes on from it, so a
    version never names two states of one key (an If-Match held from before a delete cannot match).
    """
    last = (
        MemoryEvent.objects.filter(owner=owner, uid=uid, key=key).order_by("-id").values_list("version", flat=True)
    ).first()
    return last if last is not None else ABSENT_VERSION


def entry_state_locked(*, owner: User, uid: str, key: str, now: datetime) -> MemoryEntry | None:
    """The entry as it stands, locked for the rest of the caller's transaction (None when there is none, or
    its expiry has passed: it is then recorded as expired and removed, as any write would)."""
    return _locked_entry(owner=owner, uid=uid, key=key, now=now)


def last_version(*, owner: User, uid: str, key: str) -> int:
    """The version of the latest change in the history of (uid, key), ABSENT_VERSION when it has none."""
    return _last_version(owner=owner, uid=uid, key=key)


def _check_expected(entry: MemoryEntry | None, expected_version: int | None) -> None:
    if expected_version is None:
        return
    current = entry.version if entry is not None else ABSENT_VERSION
    if current != expected_version:
        raise VersionConflict(current)


def _event(entry: MemoryEntry, *, action: str, actor: User | None, before: MemoryEntry | None) -> MemoryEvent:
    after = entry if action not in (MemoryEvent.Action.DELETE, MemoryEvent.Action.EXPIRE) else None
    return MemoryEvent(
        owner_id=entry.owner_id,
        uid=entry.uid,
        key=entry.key,
        action=action,
        version=entry.version,
        value_before=before.value if before else None,
        value_after=after.value if after else None,
        kind_before=before.kind if before else None,
        kind_after=after.kind if after else None,
        meta_before=before.meta if before else None,
        meta_after=after.meta if after else None,
        privacy_before=before.privacy if before else None,
        privacy_after=after.privacy if after else None,
        created_before=before.created if before else None,
        # No account expires an entry: the clock does.
        actor_id=None if action == MemoryEvent.Action.EXPIRE else actor.pk if actor is not None else entry.owner_id,
        at=timezone.now(),
    )


def entries_expired_remove(entries: Sequence[MemoryEntry], *, at: datetime) -> None:
    """Remove these entries, whose expiry has passed, as a delete would: an "expire" event each (no actor),
    their Honcho sessions queued for deletion when sync is on. Call it in the transaction that locked them."""
    if not entries:
        return
    MemoryEvent.objects.bulk_create(
        _event(entry, action=MemoryEvent.Action.EXPIRE, actor=None, before=entry) for entry in entries
    )
    by_owner: dict[int, list[MemoryEntry]] = defaultdict(list)
    for entry in entries:
        by_owner[entry.owner_id].append(entry)
    for owned in by_owner.values():
        sync_outbox_record(owner=owned[0].owner, entries=owned, deleted=True)
    MemoryEntry.objects.filter(pk__in=[entry.pk for entry in entries]).delete()


def entries_expire(*, now: datetime | None = None, limit: int = EXPIRY_BATCH) -> int:
    """Remove up to limit entries of any account whose expiry has passed (the worker's job); how many went.

    One transaction: each removed entry gets an "expire" event in its history, with no actor, and
    when sync is on its Honcho session is deleted as a delete's would be. Reads stopped showing
    these entries when they expired; this only frees their rows. Rows another worker holds are
    skipped (PostgreSQL), so two workers never remove one entry twice.
    """
    now = now or timezone.now()
    with transaction.atomic():
        entries = list(
            MemoryEntry.objects.select_for_update(skip_locked=True, of=("self",))
            .filter(expires__lte=now)
            .select_related("owner")
            .order_by("expires", "id")[:limit]
        )
        entries_expired_remove(entries, at=now)
    return len(entries)


def sync_outbox_record(*, owner: User, entries: Sequence[MemoryEntry], deleted: bool = False) -> None:
    """Queue these entries of `owner` for Honcho: call it in the transaction that changed them.

    Every service that creates, changes or deletes entries calls this once, after writing them
    (deleted=True when they are gone), with the entries as they are now. With sync off it returns at
    once, with no query; with sync on it is one statement per 500 entries. The evaluation's probe
    account is never mirrored, nor is a local entry (its session never reaches Honcho: an entry made
    local leaves its old session behind, see `privacy_withdraw`).
    """
    shared = _mirrored(owner=owner, entries=entries)
    if not shared:
        return
    operation = SyncTask.Operation.DELETE if deleted else SyncTask.Operation.UPSERT
    outbox.tasks_record(shared, operation=operation, now=timezone.now())


def _mirrors(owner: User) -> bool:
    """Whether Honcho mirrors changes to owner's entries (its shared ones): sync is on, and owner is not the probe."""
    return settings.MEMORYHUB_HONCHO_SYNC and owner.get_username() != PROBE_USERNAME


def _mirrored(*, owner: User, entries: Sequence[MemoryEntry]) -> list[MemoryEntry]:
    """Those of these entries of `owner` that a change queues for Honcho (sync_outbox_record)."""
    if not entries or not _mirrors(owner):
        return []
    return [entry for entry in entries if entry.privacy != Privacy.LOCAL]


def privacy_withdraw(*, owner: User, entries: Sequence[MemoryEntry]) -> None:
    """Take these entries, being made local, out of Honcho and remote embeddings: call it in that transaction.

    Each gets a new Honcho session id (the caller saves it with the change): the old session is
    queued for deletion, when sync is on or the hub ever queued it, and the new one never leaves
    the hub. A vector a remote provider made of the entry is dropped.
    """
    if not entries:
        return
    old_sessions = [entry.honcho_session_id for entry in entries]
    mirrored = settings.MEMORYHUB_HONCHO_SYNC and owner.get_username() != PROBE_USERNAME
    if not mirrored:
        mirrored_sessions = set(
            SyncTask.objects.filter(session_id__in=old_sessions).values_list("session_id", flat=True)
        )
    gone = [
        MemoryEntry(
            honcho_session_id=entry.honcho_session_id,
            owner_id=entry.owner_id,
            uid=entry.uid,
            key=entry.key,
            version=entry.version,
        )
        for entry in entries
        if mirrored or entry.honcho_session_id in mirrored_sessions
    ]
    if gone:
        outbox.tasks_record(gone, operation=SyncTask.Operation.DELETE, now=timezone.now())
    for entry in entries:
        entry.honcho_session_id = new_honcho_session_id()
    embedding_withdraw(entries)


def account_default_privacy(owner: User) -> str:
    """The privacy class the account's writes take when they name none (its policy's, else shared): one query,
    none when the account carries its policy (read with its API token, memories.selectors.account_policy)."""
    return account_policy(account=owner).default_privacy or Privacy.SHARED


def held_privacy(*, owner: User, privacy: str | None, exists: bool) -> str | None:
    """The privacy a held write keeps: the one it named; for a write that would create the entry and names none,
    the account's default as it is now, not as it may be at the approval (a default made shared meanwhile would
    share it); None (the entry's own) for a change of an existing entry that names none."""
    return privacy if privacy is not None or exists else account_default_privacy(owner)


def _snapshot(entry: MemoryEntry) -> MemoryEntry:
    return MemoryEntry(
        value=entry.value,
        kind=entry.kind,
        meta=entry.meta,
        privacy=entry.privacy,
        expires=entry.expires,
        created=entry.created,
    )


def _apply_change(
    entry: MemoryEntry,
    *,
    owner: User,
    value: str | None,
    kind: str | None,
    meta: dict | None,
    privacy: str | None,
    actor: User | None,
    guard_flags: str | None = None,
    expires: Expires = KEEP,
) -> PutResult:
    """Change the entry, locked in the caller's transaction, recording the change (nothing when it changes
    nothing)."""
    result = _changed(
        entry,
        owner=owner,
        value=value,
        kind=kind,
        meta=meta,
        privacy=privacy,
        actor=actor,
        guard_flags=guard_flags,
        expires=expires,
        unlocked=False,
    )
    assert result is not None
    return result


def _changed(
    entry: MemoryEntry,
    *,
    owner: User,
    value: str | None,
    kind: str | None,
    meta: dict | None,
    privacy: str | None,
    actor: User | None,
    guard_flags: str | None,
    expires: Expires,
    unlocked: bool,
) -> PutResult | None:
    """_apply_change; unlocked (PostgreSQL, outside any transaction, with the entry as read but not locked): the
    change, its event and its vector's mark in one statement that writes only while the entry is at the version
    read, and None, having written nothing, when it no longer is, or when the change takes more than that
    statement (making the entry local)."""
    before = _snapshot(entry)
    read_version = entry.version
    new_value = entry.value if value is None else value
    new_kind = entry.kind if kind is None else kind
    new_meta = entry.meta if meta is None else meta
    new_privacy = entry.privacy if privacy is None else privacy
    new_expires = entry.expires if expires is KEEP else expires
    if (new_value, new_kind, new_meta, new_privacy, new_expires) == (
        entry.value,
        entry.kind,
        entry.meta,
        entry.privacy,
        entry.expires,
    ):
        return PutResult(entry=entry, created=False, changed=False)
    fields = ["value", "value_folded", "kind", "meta", "privacy", "expires", "version", "updated"]
    if new_privacy == Privacy.LOCAL and entry.privacy != Privacy.LOCAL:
        if unlocked:
            return None
        privacy_withdraw(owner=owner, entries=[entry])
        fields.append("honcho_session_id")
    entry.value, entry.kind, entry.meta, entry.privacy = new_value, new_kind, new_meta, new_privacy
    entry.expires = new_expires
    if guard_flags is not None:
        entry.guard_flags = guard_flags
        fields.append("guard_flags")
    entry.version += 1
    entry.updated = timezone.now()
    # The change, its "update" event and (when its text changed) its vector's mark: on PostgreSQL one statement.
    following = [Following(_event(entry, action=MemoryEvent.Action.UPDATE, actor=actor, before=before))]
    # A local entry made shared may have had no vector (a remote provider is never given one).
    if entry.value != before.value or (before.privacy == Privacy.LOCAL and entry.privacy != Privacy.LOCAL):
        wanted = embedding_wanted_row(entry)
        if wanted is not None:
            following.append(Following(wanted, takes_key="entry", replaces=WANTED_AGAIN))
    if not row_update(
        entry, fields, following=following, unless_changed={"version": read_version} if unlocked else None
    ):
        if unlocked:
            return None
        raise IntegrityError(f"{entry.uid}/{entry.key} was removed while locked; nothing was written")
    sync_outbox_record(owner=owner, entries=[entry])
    return PutResult(entry=entry, created=False, changed=True)


def entry_put(
    *,
    owner: User,
    uid: str,
    key: str,
    value: str,
    kind: str | None = None,
    meta: dict | None = None,
    privacy: str | None = None,
    expires: object = KEEP,
    ttl: object = None,
    actor: User | None = None,
    expected_version: int | None = None,
    guard_decision: GuardDecision | None = None,
) -> PutResult:
    """Create the entry (owner, uid, key) or replace its value.

    ttl (seconds from now) or expires (an aware time in the future) sets when the entry expires;
    expires=None clears it; leaving both out keeps the entry's (none on creation). An entry whose
    expiry has passed counts as absent: the put creates the key anew (created, 201).

    A new entry starts at version 1, or when (uid, key) was deleted before, at the version after
    the last one its history holds: a version never repeats for a key. kind, meta and privacy left
    as None keep what the entry has (or on creation the defaults: privacy is the account's
    default_privacy, memories.selectors.account_policy). A put that changes nothing records
    nothing and keeps the version. actor is the account that made the
    change (the owner when None). With expected_version, the write happens only when the entry is
    at that version (ABSENT_VERSION: only when there is no such entry), else VersionConflict. Raises
    InvalidField for bad input.

    Key and value pass the write guard first (memories.services.guarding): a write that breaks a
    rule is stored with its flags, or, when the account holds such writes, stored as a HeldWrite
    only, and WriteHeld is raised once that is committed (nothing else is written). guard_decision
    is for callers that scanned already (a batch); approving a held write passes a clean one.

    On PostgreSQL, outside any transaction, a put the guard lets through and Honcho does not mirror is
    written without BEGIN, locked read or COMMIT (_put_unlocked); it writes what the locked path would.
    """
    check_uid(uid)
    check_key(key)
    check_value(value)
    if kind is not None:
        check_kind(kind)
    if meta is not None:
        check_meta(meta)
    if privacy is not None:
        check_privacy(privacy)
    now = timezone.now()
    new_expires = _expiry(expires=expires, ttl=ttl, now=now)
    decision = (
        guard_decision if guard_decision is not None else guard_decide(owner=owner, uid=uid, key=key, value=value)
    )
    put = _Put(
        owner=owner,
        uid=uid,
        key=key,
        value=value,
        kind=kind,
        meta=meta,
        privacy=privacy,
        expires=new_expires,
        now=now,
        actor=actor,
        expected_version=expected_version,
        decision=decision,
    )
    # A put standing alone that may create its key: it may be written without the locked read first.
    creates_first = not connection.in_atomic_block and expected_version in (None, ABSENT_VERSION) and not decision.hold
    if creates_first and connection.vendor == "postgresql" and not _mirrors(owner):
        result = _put_unlocked(put)
        if result is not None:
            return result
    creation: tuple[MemoryEntry, PreparedWrite] | None = None
    if creates_first and connection.vendor == "sqlite" and not _CHANGES_SEEN.get(put.user, False):
        created = put.entry_new()
        creation = (created, _creation_prepare(created, actor=actor))
    expiry_held = held_expiry(ttl=ttl, expires=new_expires) if decision.hold else KEEPS_EXPIRY
    # A prepared creation runs once: a put written again takes the locked path.
    unused = [creation]

    def write() -> PutResult | HeldWrite:
        return _put_in_transaction(put, creation=unused.pop() if unused else None, held_expiry=expiry_held)

    outcome = _written_again_while_version_taken(write)
    if isinstance(outcome, HeldWrite):
        raise WriteHeld(outcome)
    _changes_seen(put.user, not outcome.created)
    return outcome


@dataclass(frozen=True)
class _Put:
    """A put as entry_put was asked it, checked, with the guard's decision and the expiry it sets: what each way
    of writing it reads."""

    owner: User
    uid: str
    key: str
    value: str
    kind: str | None
    meta: dict | None
    privacy: str | None
    expires: Expires
    now: datetime
    actor: User | None
    expected_version: int | None
    decision: GuardDecision

    @property
    def user(self) -> tuple[int, str]:
        return (self.owner.pk, self.uid)

    def entry_new(self) -> MemoryEntry:
        """The entry this put creates (not saved): kind, meta and privacy left as None take the defaults. Its
        version is worked out by its INSERT (_creation_prepare), from the key's history."""
        return MemoryEntry(
            owner=self.owner,
            uid=self.uid,
            key=self.key,
            value=self.value,
            kind=self.kind or DEFAULT_KIND,
            meta=self.meta if self.meta is not None else {},
            privacy=self.privacy or account_default_privacy(self.owner),
            expires=None if self.expires is KEEP else self.expires,
            created=self.now,
            updated=self.now,
            version=ABSENT_VERSION + 1,
            honcho_session_id=new_honcho_session_id(),
            guard_flags=self.decision.flags,
        )

    def change(self, entry: MemoryEntry, *, unlocked: bool) -> PutResult | None:
        """This put applied to the key's entry (_changed)."""
        return _changed(
            entry,
            owner=self.owner,
            value=self.value,
            kind=self.kind,
            meta=self.meta,
            privacy=self.privacy,
            actor=self.actor,
            guard_flags=self.decision.flags,
            expires=self.expires,
            unlocked=unlocked,
        )


# Per (owner id, uid), whether this process's last put of the user (standing alone or not) found its key's entry
# there: when it did, the next put standing alone reads the entry first (a cheap statement) rather than
# preparing and trying to create it first (the costlier way, wasted on a key that has an entry). A guess for
# speed alone: either way the put writes the same. Forgotten whole past CHANGES_SEEN_USERS users.
_CHANGES_SEEN: dict[tuple[int, str], bool] = {}
CHANGES_SEEN_USERS = 10_000


def _changes_seen(user: tuple[int, str], seen: bool) -> None:
    if len(_CHANGES_SEEN) >= CHANGES_SEEN_USERS:
        _CHANGES_SEEN.clear()
    _CHANGES_SEEN[user] = seen


def _entry_read(*, owner_id: int, uid: str, key: str, locked: bool = False) -> tuple | None:
    """The row of the entry (owner, uid, key) as entry_columns reads it (locked for the caller's transaction when
    asked); None when there is none."""
    with connection.cursor() as cursor:
        cursor.execute(_entry_read_sql(connection.vendor, locked=locked), [owner_id, uid, key])
        return cursor.fetchone()


def _put_unlocked(put: _Put) -> PutResult | None:
    """entry_put on PostgreSQL outside any transaction, for a write the guard lets through and Honcho does not
    mirror: each statement is atomic by itself, so no BEGIN, locked read or COMMIT. A new key is one statement
    (_created_else_read), where the locked path (_put_locked) takes four round trips; a key that has an entry is
    two, that statement (which reads the entry) and the change (_changed, which writes only while the entry is
    at the version read). None, having written nothing, when a concurrent writer's entry is not visible yet,
    the entry has expired, it changed in between, or the change makes it local: the caller then takes the
    locked path."""
    found = _entry_read(owner_id=put.owner.pk, uid=put.uid, key=put.key) if _CHANGES_SEEN.get(put.user) else None
    if found is None:
        entry = put.entry_new()
        try:
            found = _created_else_read(entry, actor=put.actor)
        except IntegrityError as error:
            # Nothing was written (one statement): the locked path reads the history again.
            if version_taken(error):
                return None
            raise
        if found is None:
            _changes_seen(put.user, False)
            return PutResult(entry=entry, created=True, changed=True)
        if found[0] is None:
            return None
    _changes_seen(put.user, True)
    existing = entry_from_row(found)
    if existing.expired(put.now):
        return None
    _check_expected(existing, put.expected_version)
    return put.change(existing, unlocked=True)


def _put_locked(put: _Put, *, held_expiry: HeldExpiry = KEEPS_EXPIRY) -> PutResult | HeldWrite:
    """entry_put inside its transaction: the held write (saved) when the guard holds it, else the put's result."""
    entry = _locked_entry(owner=put.owner, uid=put.uid, key=put.key, now=put.now)
    _check_expected(entry, put.expected_version)
    if put.decision.hold:
        held = held_write_new(
            owner=put.owner,
            uid=put.uid,
            key=put.key,
            value=put.value,
            kind=put.kind,
            meta=put.meta,
            privacy=held_privacy(owner=put.owner, privacy=put.privacy, exists=entry is not None),
            actor=put.actor,
            decision=put.decision,
            expiry=held_expiry,
            expected_version=put.expected_version,
        )
        held.save()
        return held
    attempts = 0
    while entry is None:
        entry = put.entry_new()
        if _created(entry, actor=put.actor):
            sync_outbox_record(owner=put.owner, entries=[entry])
            return PutResult(entry=entry, created=True, changed=True)
        # A concurrent writer created the same entry between our read and our insert (possible on PostgreSQL):
        # apply this write on top of theirs, unless it was to create only; when another has removed it again
        # meanwhile, create it after them, the version going on from theirs.
        attempts += 1
        if attempts == CREATE_ATTEMPTS:
            raise IntegrityError(
                f"{put.uid}/{put.key} kept being created and removed by concurrent writes; nothing was written"
            )
        entry = _locked_entry(owner=put.owner, uid=put.uid, key=put.key, now=put.now)
        _check_expected(entry, put.expected_version)
    result = put.change(entry, unlocked=False)
    assert result is not None
    return result


def _put_in_transaction(
    put: _Put, *, creation: tuple[MemoryEntry, PreparedWrite] | None, held_expiry: HeldExpiry
) -> PutResult | HeldWrite:
    """entry_put in a transaction (its own, or the caller's as a savepoint), creating the entry first when its
    creation was prepared (SQLite: _creation_prepare), else by the locked path (_put_locked)."""
    with transaction.atomic():
        if creation is not None:
            created, prepared = creation
            if prepared.run():
                sync_outbox_record(owner=put.owner, entries=[created])
                return PutResult(entry=created, created=True, changed=True)
            # The key has an entry (expired, perhaps): the locked path below, which reads it.
            _changes_seen(put.user, True)
        return _put_locked(put, held_expiry=held_expiry)


def entry_update(
    *,
    owner: User,
    uid: str,
    key: str,
    value: str | None = None,
    kind: str | None = None,
    meta: dict | None = None,
    privacy: str | None = None,
    expires: object = KEEP,
    ttl: object = None,
    actor: User | None = None,
    expected_version: int | None = None,
) -> PutResult:
    """Change some fields of an existing entry (expires and ttl as entry_put takes them); raises
    EntryNotFound when there is none or its expiry has passed.

    A new value passes the write guard as entry_put's does (WriteHeld when the account holds it).
    """
    if value is not None:
        check_value(value)
    if kind is not None:
        check_kind(kind)
    if meta is not None:
        check_meta(meta)
    if privacy is not None:
        check_privacy(privacy)
    new_expires = _expiry(expires=expires, ttl=ttl, now=timezone.now())
    decision = guard_decide(owner=owner, uid=uid, key=key, value=value) if value is not None else None
    held: HeldWrite | None = None
    with transaction.atomic():
        entry = _locked_entry(owner=owner, uid=uid, key=key)
        if entry is None:
            if expected_version in (None, ABSENT_VERSION):
                raise EntryNotFound(f"{uid}/{key}")
            raise VersionConflict(ABSENT_VERSION)
        _check_expected(entry, expected_version)
        if decision is not None and decision.hold:
            assert value is not None
            held = held_write_new(
                owner=owner,
                uid=uid,
                key=key,
                value=value,
                kind=kind,
                meta=meta,
                privacy=privacy,
                actor=actor,
                decision=decision,
                expiry=held_expiry(ttl=ttl, expires=new_expires),
                expected_version=expected_version,
            )
            held.save()
        else:
            result = _apply_change(
                entry,
                owner=owner,
                value=value,
                kind=kind,
                meta=meta,
                privacy=privacy,
                actor=actor,
                guard_flags=decision.flags if decision is not None else None,
                expires=new_expires,
            )
    if held is not None:
        raise WriteHeld(held)
    return result


def entry_delete(
    *,
    owner: User,
    uid: str,
    key: str,
    actor: User | None = None,
    expected_version: int | None = None,
) -> MemoryEntry | None:
    """Delete the entry and record it in the history; returns the deleted entry, or None if there was none."""
    with transaction.atomic():
        entry = _locked_entry(owner=owner, uid=uid, key=key)
        _check_expected(entry, expected_version)
        if entry is None:
            return None
        _event(entry, action=MemoryEvent.Action.DELETE, actor=actor, before=entry).save()
        sync_outbox_record(owner=owner, entries=[entry], deleted=True)
        entry.delete()
        return entry


# Entries deleted by id per statement (well under SQLite's limit of variables in one statement).
DELETE_CHUNK = 500


def _entries_delete(entries: Sequence[MemoryEntry]) -> None:
    """Delete these entries (with their vector rows), by id."""
    ids = [entry.pk for entry in entries]
    for start in range(0, len(ids), DELETE_CHUNK):
        MemoryEntry.objects.filter(pk__in=ids[start : start + DELETE_CHUNK]).delete()


def _user_entries_locked(*, owner: User, uid: str) -> list[MemoryEntry]:
    return list(MemoryEntry.objects.select_for_update().filter(owner=owner, uid=uid).order_by("pk"))


def user_forget(*, owner: User, uid: str, actor: User | None = None) -> int:
    """Delete every entry the account holds about uid; the history stays. Returns how many went."""
    with transaction.atomic():
        entries = _user_entries_locked(owner=owner, uid=uid)
        if not entries:
            return 0
        MemoryEvent.objects.bulk_create(
            _event(entry, action=MemoryEvent.Action.DELETE, actor=actor, before=entry) for entry in entries
        )
        sync_outbox_record(owner=owner, entries=entries, deleted=True)
        # The entries locked, not every entry of uid: one another writer created meanwhile (PostgreSQL) stays,
        # with its history, as a write made after the forget.
        _entries_delete(entries)
        return len(entries)


@dataclass(frozen=True)
class Erasure:
    """What an erasure removed: the uid's entries and history events (the erasure's own record aside)."""

    uid: str
    entries: int
    events: int
    # How many of the uid's Honcho sessions are queued for deletion (none when sync never mirrored them).
    honcho_deletions: int = 0


def user_erase(*, owner: User, uid: str, actor: User | None = None) -> Erasure | None:
    """Erase uid from the account, for a request to be forgotten: entries, history and Honcho sessions.

    In one transaction: every entry the account holds about uid is deleted, with every history event
    of uid and every write of uid the guard held for review (so nothing can be restored, and no
    value, key or meta of theirs stays), and the Honcho sessions of its shared entries, and of any
    earlier one the outbox still names, are queued for deletion. One `erase` event stays in their
    place: who (actor, the owner when None), when, and how many entries, with an empty key and no
    values. Earlier erase events stay too. A later write
    to a key of uid starts again at version 1. Returns None, writing nothing, when uid has no
    entries, history or held writes.
    """
    check_uid(uid)
    with transaction.atomic():
        entries = _user_entries_locked(owner=owner, uid=uid)
        history = MemoryEvent.objects.filter(owner=owner, uid=uid).exclude(action=MemoryEvent.Action.ERASE)
        held_writes = HeldWrite.objects.filter(owner=owner, uid=uid)
        if not entries and not history.exists() and not held_writes.exists():
            return None
        # Sessions of entries deleted before (a forget while sync was off, a key made local since)
        held = {entry.honcho_session_id for entry in entries}
        earlier = [
            MemoryEntry(honcho_session_id=session_id, owner_id=owner.pk, uid=uid, key=key, version=version)
            for session_id, key, version in SyncTask.objects.filter(
                owner=owner, uid=uid, operation=SyncTask.Operation.UPSERT
            ).values_list("session_id", "key", "version")
            if session_id not in held
        ]
        if earlier:
            outbox.tasks_record(earlier, operation=SyncTask.Operation.DELETE, now=timezone.now())
        erased = events = 0
        while True:
            sync_outbox_record(owner=owner, entries=entries, deleted=True)
            _entries_delete(entries)
            erased += len(entries)
            events += history.delete()[0]
            # On PostgreSQL another writer may have created an entry of uid since the entries were locked: its
            # history event, committed with it, was either erased just now (the entry is found here, and goes
            # too) or not yet visible (then neither was the entry: it stays, with its history, as a write made
            # after the erasure). Never an entry left without its history.
            entries = _user_entries_locked(owner=owner, uid=uid)
            if not entries:
                break
        # Writes the guard held for review carry values too (pending or decided): they go with the rest.
        held_writes.delete()
        MemoryEvent.objects.create(
            owner=owner,
            uid=uid,
            key="",
            action=MemoryEvent.Action.ERASE,
            version=0,
            entries_erased=erased,
            actor_id=actor.pk if actor is not None else owner.pk,
            at=timezone.now(),
        )
        honcho_deletions = SyncTask.objects.filter(
            owner=owner, uid=uid, operation=SyncTask.Operation.DELETE, status=SyncTask.Status.PENDING
        ).count()
    return Erasure(uid=uid, entries=erased, events=events, honcho_deletions=honcho_deletions)


def _check_probe_account(owner: User) -> None:
    """ValueError for any account but the reserved probe account: only its data is the evaluation's to clear."""
    if owner.get_username() != PROBE_USERNAME:
        raise ValueError(f"only the probe account {PROBE_USERNAME!r} can be cleared")


def probe_data_clear(*, owner: User, uid: str) -> int:
    """Remove every entry and history row of one evaluation run's uid of the reserved probe account.

    Probe data is the evaluation's scaffolding, not anyone's memories, so it leaves no history
    behind. Each run has a uid of its own, so runs at the same time never clear each other's data.
    Refuses (ValueError) any other account. Returns how many entries went.
    """
    _check_probe_account(owner)
    with transaction.atomic():
        deleted, _ = MemoryEntry.objects.filter(owner=owner, uid=uid).delete()
        MemoryEvent.objects.filter(owner=owner, uid=uid).delete()
    return deleted


# A run's probe data untouched this long is a dead worker's (killed mid-run, its clean-up never ran; no run goes
# this long without a write): the next run removes it.
PROBE_ABANDONED_AFTER = timedelta(days=1)


def probe_data_abandoned_clear(*, owner: User, now: datetime) -> int:
    """Remove the probe data that runs whose worker died left behind: every probe uid of the reserved account none
    of whose entries or history rows is younger than PROBE_ABANDONED_AFTER. Returns how many entries went."""
    _check_probe_account(owner)
    recent = now - PROBE_ABANDONED_AFTER
    entries = MemoryEntry.objects.filter(owner=owner, uid__startswith=PROBE_UID)
    events = MemoryEvent.objects.filter(owner=owner, uid__startswith=PROBE_UID)
    held = {*entries.values_list("uid", flat=True).distinct(), *events.values_list("uid", flat=True).distinct()}
    live = {
        *entries.filter(updated__gte=recent).values_list("uid", flat=True).distinct(),
        *events.filter(at__gte=recent).values_list("uid", flat=True).distinct(),
    }
    return sum(probe_data_clear(owner=owner, uid=uid) for uid in sorted(held - live))


class EntryExists(Exception):
    """The entry is there already: there is nothing to restore."""


def entry_restore(
    *, owner: User, uid: str, key: str, actor: User | None = None, expected_version: int | None = None
) -> MemoryEntry:
    """Bring back a deleted entry as it was when it was last deleted.

    The restored entry keeps its value, kind, meta and creation time, and its version goes on from
    the deleted one (deleted at version N, restored at N + 1), so every version of (uid, key) names
    one state. The history records the restore as a "create" event at that version. Raises
    EntryNotFound when the history holds no deletion of (uid, key) to undo, and EntryExists when
    the entry is there (restoring would overwrite it). With expected_version, the restore happens
    only when the deletion to undo is the one at that version (the version the entry was deleted
    at, the ETag it last had), else VersionConflict: a restore never brings back a state the
    caller has not seen.
    """
    return _written_again_while_version_taken(
        lambda: _restore_in_transaction(owner=owner, uid=uid, key=key, actor=actor, expected_version=expected_version)
    )


def _restore_in_transaction(
    *, owner: User, uid: str, key: str, actor: User | None, expected_version: int | None
) -> MemoryEntry:
    with transaction.atomic():
        if _locked_entry(owner=owner, uid=uid, key=key) is not None:
            raise EntryExists(f"{uid}/{key}")
        # The latest change of the entry's state (a rejected held write changed nothing).
        deletion = (
            MemoryEvent.objects.filter(owner=owner, uid=uid, key=key)
            .exclude(action=MemoryEvent.Action.REJECT)
            .order_by("-id")
            .first()
        )
        if deletion is None or deletion.action != MemoryEvent.Action.DELETE:
            raise EntryNotFound(f"{uid}/{key}")
        if expected_version is not None and expected_version != deletion.version:
            raise VersionConflict(ABSENT_VERSION, deleted_at=deletion.version)
        creation = deletion.created_before
        if creation is None:
            # A deletion from before events kept the entry's creation time: its creation event is the nearest
            # (written a moment after the entry's created; for an entry imported or restored, later still).
            creation = (
                MemoryEvent.objects.filter(
                    owner=owner, uid=uid, key=key, action=MemoryEvent.Action.CREATE, id__lt=deletion.id
                )
                .order_by("-id")
                .values_list("at", flat=True)
                .first()
            )
        now = timezone.now()
        value = deletion.value_before or ""
        # A restore brings back a value the hub stored before: it is marked as a flag would mark it,
        # never held again (the guard mode decides only whether it is marked).
        decision = guard_decide(owner=owner, uid=uid, key=key, value=value)
        entry = MemoryEntry(
            owner=owner,
            uid=uid,
            key=key,
            guard_flags=decision.flags,
            value=value,
            kind=deletion.kind_before or DEFAULT_KIND,
            meta=deletion.meta_before if deletion.meta_before is not None else {},
            privacy=deletion.privacy_before or account_default_privacy(owner),
            created=creation or now,
            updated=now,
            version=deletion.version + 1,
            honcho_session_id=new_honcho_session_id(),
        )
        try:
            with transaction.atomic():
                entry.save(force_insert=True)
        except IntegrityError:
            # A concurrent writer created (uid, key) after our check (possible on PostgreSQL).
            raise EntryExists(f"{uid}/{key}") from None
        _event(entry, action=MemoryEvent.Action.CREATE, actor=actor, before=None).save()
        sync_outbox_record(owner=owner, entries=[entry])
        embedding_mark_stale([entry])
        return entry
