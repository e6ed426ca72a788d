"""Imports: chunks of exported records upserted in bulk, with history and sync tasks; and the
restore of a full backup (account policies, entries and their history, exactly as they were)."""

import bisect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, OperationalError, transaction
from django.db.models import Max
from django.utils import timezone

from memories.accounts import account_create_locked
from memories.embeddings.store import embedding_mark_stale
from memories.folding import fold
from memories.models import (
    DEFAULT_KIND,
    GUARD_FLAGS_MAX_LENGTH,
    AccountPolicy,
    GuardMode,
    HeldWrite,
    MemoryEntry,
    MemoryEvent,
    Privacy,
    new_honcho_session_id,
)
from memories.search.lexical import FTS_TABLE, POSTGRES_SEARCH_INDEXES, WORDS_TABLE, word_statistics_clear
from memories.selectors import account_policy, entry_get
from memories.services.entries import (
    ENTRY_IDENTITY_COLUMNS,
    account_default_privacy,
    held_privacy,
    privacy_withdraw,
    sync_outbox_record,
)
from memories.services.guarding import HeldExpiry, guard_decide, held_write_new
from memories.services.locks import users_lock
from memories.validation import (
    EXPIRY_MAX_SECONDS,
    InvalidField,
    check_key,
    check_kind,
    check_meta,
    check_moment_in_range,
    check_privacy,
    check_ttl,
    check_uid,
    check_value,
)

# The largest version a PositiveIntegerField holds on every database.
DATABASE_MAX_VERSION = 2_147_483_647
# The largest version an import accepts: one below the database's, so the entry can still change.
IMPORT_MAX_VERSION = DATABASE_MAX_VERSION - 1
# How far in the future an imported created or updated may be: the clocks of two hubs differ a little.
IMPORT_CLOCK_SKEW = timedelta(minutes=5)
# Keys looked up per query when an import checks which entries exist.
IMPORT_LOOKUP_SIZE = 500
# How often a chunk is tried when a concurrent write made it fail (on PostgreSQL: an agent creating one of
# its keys between the chunk's look at what exists and its insert, or a deadlock).
IMPORT_ATTEMPTS = 5
# PostgreSQL's codes for those failures: unique_violation, deadlock_detected, serialization_failure.
CONCURRENT_WRITE_SQLSTATES = frozenset({"23505", "40P01", "40001"})
# SQLite's search indexes (FTS5), merged after a bulk import.
SQLITE_SEARCH_INDEXES = (FTS_TABLE, WORDS_TABLE)


def _whole(value: object, *, lowest: int, highest: int = DATABASE_MAX_VERSION) -> bool:
    """Whether value is a whole number from lowest to highest (a JSON number, not a boolean)."""
    return type(value) is int and lowest <= value <= highest


@dataclass(frozen=True)
class ImportRecord:
    """One entry as an export file holds it. Timestamps and version left as None get defaults; privacy
    left as None is the account's default for a new entry and kept for one that exists."""

    uid: str
    key: str
    value: str
    kind: str = DEFAULT_KIND
    meta: dict = field(default_factory=dict)
    created: datetime | None = None
    updated: datetime | None = None
    version: int | None = None
    privacy: str | None = None
    # Set by the import's write guard, never read from a file: the rules the record broke, as stored.
    guard_flags: str = ""
    # When the entry expires (None: never); a time already past is kept, and the entry is as expired.
    expires: datetime | None = None


@dataclass
class ImportCounts:
    """What an import did (or, in a dry run, would do). invalid holds (record index, error)."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    # Records for a (uid, key) met earlier in the same chunk: applied after it, in order.
    repeated: int = 0
    # Records the write guard held for review (HeldWrite): not stored as entries.
    held: int = 0
    invalid: list[tuple[int, InvalidField]] = field(default_factory=list)


def _check_import_record(record: ImportRecord, *, now: datetime) -> None:
    check_uid(record.uid)
    check_key(record.key)
    check_value(record.value)
    check_kind(record.kind)
    check_meta(record.meta)
    if record.privacy is not None:
        check_privacy(record.privacy)
    for name in ("created", "updated", "expires"):
        moment = getattr(record, name)
        if moment is not None and (not isinstance(moment, datetime) or timezone.is_naive(moment)):
            raise InvalidField(name, "must be a date and time with a time zone (ISO 8601).")
        if moment is not None:
            check_moment_in_range(name, moment)
    if record.expires is not None and record.expires > now + timedelta(seconds=EXPIRY_MAX_SECONDS):
        # As a write's: a backup's expiry is never further ahead (one already passed stays passed).
        raise InvalidField("expires", f"must be at most {EXPIRY_MAX_SECONDS} seconds ahead.")
    for name in ("created", "updated"):
        moment = getattr(record, name)
        if moment is not None and moment > now + IMPORT_CLOCK_SKEW:
            raise InvalidField(
                name, f"must not be in the future (more than {IMPORT_CLOCK_SKEW.seconds // 60} minutes ahead)."
            )
    if record.created and record.updated and record.created > record.updated:
        raise InvalidField("created", "must not be later than updated.")
    if record.version is not None and not _whole(record.version, lowest=1, highest=IMPORT_MAX_VERSION):
        raise InvalidField("version", f"must be a whole number from 1 to {IMPORT_MAX_VERSION}.")


def _existing_entries(*, owner: User, identities: list[tuple[str, str]], lock: bool) -> dict:
    keys_by_uid: dict[str, list[str]] = {}
    for uid, key in identities:
        keys_by_uid.setdefault(uid, []).append(key)
    found: dict[tuple[str, str], MemoryEntry] = {}
    entries = MemoryEntry.objects.select_for_update() if lock else MemoryEntry.objects.all()
    for uid, keys in keys_by_uid.items():
        for start in range(0, len(keys), IMPORT_LOOKUP_SIZE):
            for entry in entries.filter(owner=owner, uid=uid, key__in=keys[start : start + IMPORT_LOOKUP_SIZE]):
                found[(entry.uid, entry.key)] = entry
    return found


def _latest_events(*, owner: User, identities: list[tuple[str, str]]) -> dict[tuple[str, str], MemoryEvent]:
    """The latest history event of each (uid, key) that has one: a re-created key goes on from its version.

    Two queries per IMPORT_LOOKUP_SIZE keys, both on the index memory_event_entry_history.
    """
    keys_by_uid: dict[str, list[str]] = {}
    for uid, key in identities:
        keys_by_uid.setdefault(uid, []).append(key)
    found: dict[tuple[str, str], MemoryEvent] = {}
    for uid, keys in keys_by_uid.items():
        for start in range(0, len(keys), IMPORT_LOOKUP_SIZE):
            latest_ids = (
                MemoryEvent.objects.filter(owner=owner, uid=uid, key__in=keys[start : start + IMPORT_LOOKUP_SIZE])
                .values("key")
                .annotate(latest=Max("id"))
                .values_list("latest", flat=True)
            )
            for event in MemoryEvent.objects.filter(id__in=list(latest_ids)):
                found[(event.uid, event.key)] = event
    return found


def _new_entry_version(record: ImportRecord, latest: MemoryEvent | None) -> int:
    """The version a record gets when it creates its entry: its own, unless the key's history has used it.

    A record that is the very state the history's latest event left (an entry lost with its history
    kept) keeps its version, and writes no event: the history holds that state already. Otherwise a version
    the history holds already goes on from the latest.
    """
    version = record.version or 1
    if latest is None:
        return version
    if (
        latest.action != MemoryEvent.Action.DELETE
        and latest.version == version
        and (latest.value_after, latest.kind_after, latest.meta_after) == (record.value, record.kind, record.meta)
    ):
        return version
    return max(version, latest.version + 1)


ENTRY_IMPORT_COLUMNS = (
    "owner_id", "uid", "key", "value", "kind", "meta", "privacy", "created", "updated", "version",
    "honcho_session_id", "key_folded", "value_folded", "guard_flags", "expires",
)  # fmt: skip
EVENT_IMPORT_COLUMNS = (
    "owner_id", "uid", "key", "action", "version", "value_before", "value_after", "kind_before", "kind_after",
    "meta_before", "meta_after", "privacy_before", "privacy_after", "created_before", "entries_erased", "actor_id",
    "at",
)  # fmt: skip
# A backup's history event also names the held write whose decision it records.
RESTORE_EVENT_COLUMNS = (*EVENT_IMPORT_COLUMNS, "held_write_id")
# Parameters per INSERT statement on the bulk path: inside both SQLite's limit (32,766 since 3.32)
# and PostgreSQL's (65,535). Fewer, larger statements matter on SQLite: the full-text index is
# flushed once per statement, not once per row.
BULK_INSERT_PARAMETERS = 30_000


def _bulk_insert(table: str, columns: tuple[str, ...], rows: list[tuple], *, suffix: str = "") -> list[tuple]:
    """INSERT rows already in database form, in multi-row statements; what a RETURNING suffix returns.

    The import's hot path: building model instances and converting each value through its field,
    as bulk_create does, took most of an import's time; here only datetimes and JSON are converted
    (by entries_import), once.
    """
    connection = transaction.get_connection()
    quote = connection.ops.quote_name
    column_list = ", ".join(quote(column) for column in columns)
    placeholders = "(" + ", ".join(["%s"] * len(columns)) + ")"
    rows_per_statement = BULK_INSERT_PARAMETERS // len(columns)
    returned: list[tuple] = []
    with connection.cursor() as cursor:
        for start in range(0, len(rows), rows_per_statement):
            part = rows[start : start + rows_per_statement]
            cursor.execute(
                f"INSERT INTO {quote(table)} ({column_list}) VALUES {', '.join([placeholders] * len(part))}{suffix}",
                [value for row in part for value in row],
            )
            if suffix:
                returned.extend(cursor.fetchall())
    return returned


def _entries_insert(rows: list[tuple]) -> set[tuple[str, str]]:
    """Insert new entries (rows of ENTRY_IMPORT_COLUMNS); the (uid, key) of those inserted.

    On PostgreSQL a writer can create one of these keys after the import looked (a key that does not
    exist yet cannot be locked): that row is left out (ON CONFLICT DO NOTHING, which waits for that
    writer to finish) and the caller updates the entry the writer made. SQLite's IMMEDIATE transaction
    holds the write lock from BEGIN, so every row is inserted there.
    """
    connection = transaction.get_connection()
    if connection.vendor != "postgresql":
        _bulk_insert(MemoryEntry._meta.db_table, ENTRY_IMPORT_COLUMNS, rows)
        return {(row[1], row[2]) for row in rows}
    quote = connection.ops.quote_name
    identity = ", ".join(quote(column) for column in ENTRY_IDENTITY_COLUMNS)
    suffix = f" ON CONFLICT ({identity}) DO NOTHING RETURNING {quote('uid')}, {quote('key')}"
    return {
        (uid, key) for uid, key in _bulk_insert(MemoryEntry._meta.db_table, ENTRY_IMPORT_COLUMNS, rows, suffix=suffix)
    }


class _EntryVanished(Exception):
    """A key the import found created by a concurrent writer was removed again before the import could update
    it: the chunk is tried again (entries_import)."""


def _import_round(
    *,
    owner: User,
    latest: dict[tuple[str, str], ImportRecord],
    actor_id: int,
    default_privacy: str,
    now: datetime,
    counts: ImportCounts,
    dry_run: bool,
    overlay: dict[tuple[str, str], MemoryEntry],
) -> None:
    """Upsert records of distinct (uid, key) inside the caller's transaction; overlay stands for earlier dry rounds."""
    existing = _existing_entries(owner=owner, identities=list(latest), lock=not dry_run)
    existing.update({identity: overlay[identity] for identity in latest if identity in overlay})
    latest_events = _latest_events(owner=owner, identities=[each for each in latest if each not in existing])
    connection = transaction.get_connection()
    as_db_time = connection.ops.adapt_datetimefield_value
    meta_field = MemoryEntry._meta.get_field("meta")

    def as_db_json(value: dict | None) -> object:
        return None if value is None else meta_field.get_db_prep_save(value, connection)

    db_now = as_db_time(now)
    event_rows: list[tuple] = []
    changed_entries: list[MemoryEntry] = []
    created_entries: list[MemoryEntry] = []
    text_changed: list[MemoryEntry] = []
    made_local: list[MemoryEntry] = []
    # The entries to create: (row, the entry as the sync outbox reads it, its create event's row), by identity.
    creating: dict[tuple[str, str], tuple[tuple, MemoryEntry, tuple | None]] = {}

    def update(record: ImportRecord, entry: MemoryEntry) -> None:
        privacy = record.privacy or entry.privacy
        if (entry.value, entry.kind, entry.meta, entry.privacy, entry.expires) == (
            record.value,
            record.kind,
            record.meta,
            privacy,
            record.expires,
        ):
            counts.unchanged += 1
            return
        event_rows.append(
            (owner.pk, record.uid, record.key, MemoryEvent.Action.UPDATE.value,
             max(entry.version + 1, record.version or 1), entry.value, record.value, entry.kind, record.kind,
             as_db_json(entry.meta), as_db_json(record.meta), entry.privacy, privacy, as_db_time(entry.created),
             None, actor_id, db_now)
        )  # fmt: skip
        # a local entry made shared may have had no vector (a remote provider is never given one)
        if entry.value != record.value or (entry.privacy == Privacy.LOCAL and privacy != Privacy.LOCAL):
            text_changed.append(entry)
        if privacy == Privacy.LOCAL and entry.privacy != Privacy.LOCAL:
            made_local.append(entry)
        entry.value, entry.kind, entry.meta, entry.privacy = record.value, record.kind, record.meta, privacy
        entry.guard_flags = record.guard_flags
        entry.expires = record.expires
        entry.value_folded = fold(record.value)
        entry.version = max(entry.version + 1, record.version or 1)
        entry.updated = now
        changed_entries.append(entry)

    for identity, record in latest.items():
        entry = existing.get(identity)
        if entry is None:
            privacy = record.privacy or default_privacy
            created = record.created or record.updated or now
            updated = record.updated or max(created, now)
            history_latest = latest_events.get(identity)
            version = _new_entry_version(record, history_latest)
            meta = as_db_json(record.meta)
            session_id = new_honcho_session_id()
            row = (
                owner.pk, record.uid, record.key, record.value, record.kind, meta, privacy,
                as_db_time(created), as_db_time(updated), version, session_id,
                fold(record.key), fold(record.value), record.guard_flags, as_db_time(record.expires),
            )  # fmt: skip
            # What the sync outbox reads of a created entry: its identity, version and session.
            creating[identity] = (
                row,
                MemoryEntry(
                    owner_id=owner.pk,
                    uid=record.uid,
                    key=record.key,
                    value=record.value,
                    kind=record.kind,
                    meta=record.meta,
                    privacy=privacy,
                    version=version,
                    honcho_session_id=session_id,
                ),
                # None when the entry comes back at the very state (and version) the history's latest event
                # left: the history holds that state already, and a version names one state of a key.
                None if history_latest is not None and history_latest.version == version else
                (owner.pk, record.uid, record.key, MemoryEvent.Action.CREATE.value, version, None, record.value,
                 None, record.kind, None, meta, None, privacy, None, None, actor_id, db_now),
            )  # fmt: skip
            continue
        update(record, entry)
    if dry_run:
        counts.created += len(creating)
        counts.updated += len(changed_entries)
        # What a later round of the same chunk would find: the entries as this round left them.
        for _, entry, _ in creating.values():
            overlay[(entry.uid, entry.key)] = entry
        for entry in changed_entries:
            overlay[(entry.uid, entry.key)] = entry
        return
    inserted = _entries_insert([row for row, _, _ in creating.values()])
    for identity, (_, entry, event_row) in creating.items():
        if identity in inserted:
            created_entries.append(entry)
            if event_row is not None:
                event_rows.append(event_row)
    # Keys a concurrent writer created after this round looked: their entries are updated as any existing one.
    collided = [identity for identity in creating if identity not in inserted]
    if collided:
        found = _existing_entries(owner=owner, identities=collided, lock=True)
        for identity in collided:
            if identity not in found:
                raise _EntryVanished(identity)
            update(latest[identity], found[identity])
    counts.created += len(created_entries)
    counts.updated += len(changed_entries)
    privacy_withdraw(owner=owner, entries=made_local)
    if changed_entries:
        MemoryEntry.objects.bulk_update(
            changed_entries,
            [
                "value",
                "value_folded",
                "kind",
                "meta",
                "privacy",
                "version",
                "updated",
                "honcho_session_id",
                "guard_flags",
                "expires",
            ],
        )
    _bulk_insert(MemoryEvent._meta.db_table, EVENT_IMPORT_COLUMNS, event_rows)
    sync_outbox_record(owner=owner, entries=created_entries + changed_entries)
    embedding_mark_stale(created_entries + text_changed)


def entries_import(
    *,
    owner: User,
    records: list[ImportRecord],
    actor: User | None = None,
    dry_run: bool = False,
) -> ImportCounts:
    """Upsert one chunk of records into the account's entries, in one transaction, with history.

    The bulk path for imports and restores: every record is checked as entry_put checks it;
    invalid ones are skipped and reported in ImportCounts.invalid, the rest are written with bulk
    inserts. Timestamps and versions:
    - a record for a new entry keeps its created, updated and version (a restore is exact);
      missing ones default to now, now and 1; but a key deleted before goes on from the last version
      its history holds (+ 1) when the record's is not past it, so a version never repeats;
    - a record equal in value, kind and meta to the entry already here changes nothing;
    - a record that differs updates the entry as a put would: created stays, updated is now, and
      the version becomes the larger of (current + 1) and the record's, so it never goes back and
      If-Match holders see the change.
    Each create or update writes one history event (at = now, actor = actor or the owner). Several
    records for the same uid and key are applied in their order, each as a put (the later one
    updates what the earlier made, and both land in the history), and counted in
    ImportCounts.repeated. Refused: created or updated later than now + IMPORT_CLOCK_SKEW, and
    versions above IMPORT_MAX_VERSION (which leaves room for one more change), so everything
    imported can be exported and imported again. Each record passes the write guard as a put does:
    flagged ones are stored marked, and held ones become HeldWrites (counted in ImportCounts.held),
    not entries. dry_run counts and writes nothing.

    The chunk takes the lock of each of its users first, as a batch does (memories.services.locks). When a
    concurrent write made it fail on PostgreSQL (an agent created one of its keys after it looked, or a
    deadlock), nothing of it stayed, and it is tried again, up to IMPORT_ATTEMPTS times, reading what
    exists then: the key the agent created is updated as any existing one, both changes in its history.
    """
    counts = ImportCounts()
    # Round n holds the n-th record of each (uid, key): rounds run in order, so a key written twice
    # in a chunk is written twice, as two puts would be, and both changes land in the history.
    rounds: list[dict[tuple[str, str], ImportRecord]] = []
    seen: dict[tuple[str, str], int] = {}
    held: list[HeldWrite] = []
    guard_mode: str | None = None
    for index, record in enumerate(records):
        try:
            _check_import_record(record, now=timezone.now())
        except InvalidField as error:
            counts.invalid.append((index, error))
            continue
        decision = guard_decide(owner=owner, uid=record.uid, key=record.key, value=record.value, mode=guard_mode)
        if decision.matched and guard_mode is None:
            # The first record that broke a rule: read the account's policy once for the whole chunk.
            guard_mode = account_policy(account=owner).guard_mode
            decision = guard_decide(owner=owner, uid=record.uid, key=record.key, value=record.value, mode=guard_mode)
        if decision.hold:
            # A held record that names no privacy keeps what a put of it would take now: the entry's own, or for a
            # new entry the account's default as it is at the import, not at the approval.
            exists = record.privacy is None and entry_get(owner=owner, uid=record.uid, key=record.key) is not None
            held.append(
                held_write_new(
                    owner=owner,
                    uid=record.uid,
                    key=record.key,
                    value=record.value,
                    kind=record.kind,
                    meta=record.meta,
                    privacy=held_privacy(owner=owner, privacy=record.privacy, exists=exists),
                    actor=actor,
                    decision=decision,
                    # An imported record brings its expiry, or none: the entry takes what the record says.
                    expiry=HeldExpiry(expires=record.expires, clears=record.expires is None),
                )
            )
            continue
        if decision.flags:
            record = replace(record, guard_flags=decision.flags)
        identity = (record.uid, record.key)
        round_number = seen.get(identity, -1) + 1
        seen[identity] = round_number
        if round_number:
            counts.repeated += 1
        if round_number == len(rounds):
            rounds.append({})
        rounds[round_number][identity] = record
    counts.held = len(held)
    if not rounds and not held:
        return counts
    now = timezone.now()
    actor_id = actor.pk if actor is not None else owner.pk
    default_privacy = account_default_privacy(owner)
    # Only a transaction of its own can be tried again: inside the caller's, an error ends the caller's too.
    attempts = 1 if transaction.get_connection().in_atomic_block else IMPORT_ATTEMPTS
    for attempt in range(1, attempts + 1):
        # What the rounds count starts again with each try (a copy: the refused and held records stay counted).
        written = replace(counts)
        overlay: dict[tuple[str, str], MemoryEntry] = {}
        try:
            with transaction.atomic():
                if not dry_run:
                    users_lock(owner=owner, uids=[uid for latest in rounds for uid, _ in latest])
                if held and not dry_run:
                    for each in held:
                        each.pk = None  # numbered again: a failed try's rows were rolled back
                    HeldWrite.objects.bulk_create(held)
                for latest in rounds:
                    _import_round(
                        owner=owner,
                        latest=latest,
                        actor_id=actor_id,
                        default_privacy=default_privacy,
                        now=now,
                        counts=written,
                        dry_run=dry_run,
                        overlay=overlay,
                    )
        except (IntegrityError, OperationalError, _EntryVanished) as error:
            if attempt == attempts or not _lost_a_race(error):
                raise
            continue
        return written
    raise AssertionError("unreachable: the last attempt returns or raises")


def _lost_a_race(error: Exception) -> bool:
    """Whether the chunk failed on a concurrent write (PostgreSQL): a key another writer created after the
    chunk looked (a unique violation), or a deadlock or serialization failure. Trying again then reads what
    that writer left."""
    if isinstance(error, _EntryVanished):
        return True
    return getattr(error.__cause__, "sqlstate", None) in CONCURRENT_WRITE_SQLSTATES


# Lines of a backup restored per round of checks and inserts (all rounds are one transaction).
RESTORE_CHUNK_SIZE = 5000
# Refused lines kept with their errors; the others are only counted, so a file of bad lines cannot fill memory.
RESTORE_ERRORS_KEPT = 20


@dataclass(frozen=True)
class RestoreEntry:
    """An entry line of a backup with history: restored at its own version, created and updated."""

    owner: str
    record: ImportRecord


@dataclass(frozen=True)
class RestoreEvent:
    """A history line of a backup: one MemoryEvent, restored with its own time, actor and version.

    actor is the username of the account that made the change, None when that account was deleted.
    """

    owner: str
    uid: str
    key: str
    action: str
    version: int
    value_before: str | None
    value_after: str | None
    kind_before: str | None
    kind_after: str | None
    meta_before: dict | None
    meta_after: dict | None
    actor: str | None
    at: datetime
    privacy_before: str | None = None
    privacy_after: str | None = None
    # The entry's creation time before the change (none for a create, or in a backup from before it was kept).
    created_before: datetime | None = None
    # An erasure's event: how many entries it erased (its key is empty, its version 0, it holds no values).
    entries_erased: int | None = None
    # The held write whose decision this event records: its id in the backup (its held line's), or None.
    held_write: object = None


@dataclass(frozen=True)
class RestoreHeld:
    """A held line of a backup: one write the guard held (HeldWrite), pending or decided, restored as it was.

    backup_id names it within the backup (the history events its decision wrote name it so); requested_by and
    decided_by are usernames, None when there is none or that account was deleted.
    """

    backup_id: Any
    owner: str
    uid: str
    key: str
    value: str
    kind: str | None
    meta: dict | None
    privacy: str | None
    ttl: Any
    expires: datetime | None
    clears_expiry: Any
    expected_version: Any
    guard_flags: Any
    requested_by: str | None
    requested_at: datetime
    status: Any
    decided_by: str | None
    decided_at: datetime | None
    entry_version: Any


@dataclass(frozen=True)
class RestorePolicy:
    """A policy line of a backup: the account's default privacy, guard mode and context rule."""

    owner: str
    default_privacy: str
    guard_mode: str
    context_includes_flagged: bool


# One numbered line of a backup as the reader made it: a record, or the error that the line is not one.
RestoreLine = tuple[int, RestoreEntry | RestoreEvent | RestorePolicy | RestoreHeld | InvalidField]


@dataclass
class RestoreCounts:
    """What a restore did (or would do). Nothing is restored when refused is not 0."""

    lines: int = 0
    entries: int = 0
    events: int = 0
    policies: int = 0
    held: int = 0
    accounts_created: list[str] = field(default_factory=list)
    refused: int = 0
    # The RESTORE_ERRORS_KEPT refusals of the lowest line numbers, in line order: (line number, error).
    errors: list[tuple[int, InvalidField]] = field(default_factory=list)

    def refuse(self, line_number: int, error: InvalidField) -> None:
        self.refused += 1
        bisect.insort(self.errors, (line_number, error), key=lambda refusal: refusal[0])
        if len(self.errors) > RESTORE_ERRORS_KEPT:
            self.errors.pop()


def _check_restore_entry(entry: RestoreEntry, *, now: datetime) -> None:
    _check_import_record(entry.record, now=now)
    for name in ("created", "updated", "version"):
        if getattr(entry.record, name) is None:
            raise InvalidField(name, "is required in a backup with history (the entry is restored exactly).")


def _check_restore_policy(policy: RestorePolicy) -> None:
    if policy.default_privacy not in Privacy.values:
        raise InvalidField("default_privacy", f"must be one of {', '.join(Privacy.values)}.")
    if policy.guard_mode not in GuardMode.values:
        raise InvalidField("guard_mode", f"must be one of {', '.join(GuardMode.values)}.")
    if not isinstance(policy.context_includes_flagged, bool):
        raise InvalidField("context_includes_flagged", "must be true or false.")


def _policy_differs(policy: RestorePolicy, current: AccountPolicy) -> bool:
    return (policy.default_privacy, policy.guard_mode, policy.context_includes_flagged) != (
        current.default_privacy,
        current.guard_mode,
        current.context_includes_flagged,
    )


def _check_side(event: RestoreEvent, side: str, *, present: bool) -> None:
    """Check value_<side>, kind_<side> and meta_<side>: all three set when present, else all None."""
    fields = {name: getattr(event, f"{name}_{side}") for name in ("value", "kind", "meta")}
    if not present:
        for name, content in fields.items():
            if content is not None:
                raise InvalidField(f"{name}_{side}", f"must be null for a {event.action} event.")
        return
    for name, check in (("value", check_value), ("kind", check_kind), ("meta", check_meta)):
        if fields[name] is None:
            raise InvalidField(f"{name}_{side}", f"is required for a {event.action} event.")
        try:
            check(fields[name])
        except InvalidField as error:
            raise InvalidField(f"{name}_{side}", error.message) from None


def _check_erase_event(event: RestoreEvent) -> None:
    if event.key != "" or event.version != 0:
        raise InvalidField("key", "must be empty, with version 0, for an erase event.")
    for side in ("before", "after"):
        _check_side(event, side, present=False)
    erased = event.entries_erased
    if not _whole(erased, lowest=0):
        raise InvalidField("entries_erased", "must be a whole number of at least 0 for an erase event.")


def _check_restore_event(event: RestoreEvent, *, now: datetime) -> None:
    check_uid(event.uid)
    if event.held_write is not None and not _whole(event.held_write, lowest=1):
        raise InvalidField("held_write", "must be null or a held line's id (a whole number of at least 1).")
    if event.action not in MemoryEvent.Action.values:
        raise InvalidField("action", f"must be one of {', '.join(MemoryEvent.Action.values)}.")
    for name in ("privacy_before", "privacy_after"):
        if getattr(event, name) is not None:
            try:
                check_privacy(getattr(event, name))
            except InvalidField as error:
                raise InvalidField(name, error.message) from None
    if event.action == MemoryEvent.Action.ERASE:
        _check_erase_event(event)
        _check_restore_time(event, now=now)
        return
    check_key(event.key)
    if event.entries_erased is not None:
        raise InvalidField("entries_erased", f"must be null for a {event.action} event.")
    # A rejected held write on a key never stored is at version 0: nothing was.
    lowest = 0 if event.action == MemoryEvent.Action.REJECT else 1
    if not _whole(event.version, lowest=lowest):
        raise InvalidField("version", f"must be a whole number from {lowest} to {DATABASE_MAX_VERSION}.")
    if event.action == MemoryEvent.Action.REJECT:
        # A rejection changes nothing: before and after are the entry as it stood, or none when there was none.
        stood = event.value_before is not None
        _check_side(event, "before", present=stood)
        _check_side(event, "after", present=stood)
    else:
        _check_side(event, "before", present=event.action != MemoryEvent.Action.CREATE)
        _check_side(event, "after", present=event.action not in (MemoryEvent.Action.DELETE, MemoryEvent.Action.EXPIRE))
    _check_restore_time(event, now=now)


def _check_restore_held(held: RestoreHeld, *, now: datetime) -> None:
    """A held line's fields, as HeldWrite and the guard's services would have written them."""
    if not _whole(held.backup_id, lowest=1):
        raise InvalidField("id", "must be a whole number of at least 1 (the held write's number in the backup).")
    check_uid(held.uid)
    check_key(held.key)
    check_value(held.value)
    if held.kind is not None:
        check_kind(held.kind)
    if held.meta is not None:
        check_meta(held.meta)
    if held.privacy is not None:
        check_privacy(held.privacy)
    if not isinstance(held.guard_flags, str) or not held.guard_flags or len(held.guard_flags) > GUARD_FLAGS_MAX_LENGTH:
        raise InvalidField(
            "guard_flags", f"must name the rules the write broke (1 to {GUARD_FLAGS_MAX_LENGTH} characters)."
        )
    if held.status not in HeldWrite.Status.values:
        raise InvalidField("status", f"must be one of {', '.join(HeldWrite.Status.values)}.")
    pending = held.status == HeldWrite.Status.PENDING
    if pending != (held.decided_at is None):
        raise InvalidField("decided_at", "must be null for a pending write, and set for a decided one.")
    if pending and held.decided_by is not None:
        raise InvalidField("decided_by", "must be null for a pending write.")
    if held.entry_version is not None and (
        held.status != HeldWrite.Status.APPROVED or not _whole(held.entry_version, lowest=1)
    ):
        raise InvalidField("entry_version", "must be null, or for an approved write a whole number of at least 1.")
    if held.ttl is not None:
        check_ttl(held.ttl)
    if not isinstance(held.clears_expiry, bool):
        raise InvalidField("clears_expiry", "must be true or false.")
    if sum((held.ttl is not None, held.expires is not None, held.clears_expiry)) > 1:
        raise InvalidField("ttl", "at most one of ttl, expires and clears_expiry may be set.")
    if held.expected_version is not None and not _whole(held.expected_version, lowest=0):
        raise InvalidField("expected_version", "must be null or a whole number of at least 0.")
    for name in ("requested_by", "decided_by"):
        if getattr(held, name) is not None and not isinstance(getattr(held, name), str):
            raise InvalidField(name, "must be a username or null.")
    for name in ("requested_at", "decided_at", "expires"):
        moment = getattr(held, name)
        if moment is None:
            continue
        if not isinstance(moment, datetime) or timezone.is_naive(moment):
            raise InvalidField(name, "must be a date and time with a time zone (ISO 8601).")
        if name != "expires" and moment > now + IMPORT_CLOCK_SKEW:
            raise InvalidField(
                name, f"must not be in the future (more than {IMPORT_CLOCK_SKEW.seconds // 60} minutes ahead)."
            )
    if held.decided_at is not None and held.decided_at < held.requested_at:
        raise InvalidField("decided_at", "must not be before requested_at: a write is decided after it is held.")


def _check_restore_time(event: RestoreEvent, *, now: datetime) -> None:
    if event.actor is not None and not isinstance(event.actor, str):
        raise InvalidField("actor", "must be a username or null.")
    if not isinstance(event.at, datetime) or timezone.is_naive(event.at):
        raise InvalidField("at", "must be a date and time with a time zone (ISO 8601).")
    if event.created_before is not None:
        if event.action in (MemoryEvent.Action.CREATE, MemoryEvent.Action.ERASE):
            raise InvalidField("created_before", f"must be null for a {event.action} event.")
        if not isinstance(event.created_before, datetime) or timezone.is_naive(event.created_before):
            raise InvalidField("created_before", "must be a date and time with a time zone (ISO 8601).")
    if event.at > now + IMPORT_CLOCK_SKEW:
        raise InvalidField(
            "at", f"must not be in the future (more than {IMPORT_CLOCK_SKEW.seconds // 60} minutes ahead)."
        )


class _Restore:
    """The state of one restore across its rounds: accounts found or made, and the users it has claimed."""

    def __init__(self, *, create_accounts: bool) -> None:
        self.create_accounts = create_accounts
        self.counts = RestoreCounts()
        self.accounts: dict[str, User | None] = {}
        # (owner id, uid) found empty on this hub, which this restore now fills.
        self.claimed: set[tuple[int, str]] = set()
        # (owner id, uid) that hold entries or history already: reported once, at their first line.
        self.conflicting: set[tuple[int, str]] = set()
        self.entry_identities: set[tuple[int, str, str]] = set()
        # (owner id, uid, key, version) of the create and update events read: each names one state of its key.
        self.change_versions: set[tuple[int, str, str, int]] = set()
        # The held lines read, by their id in the backup: (owner id, uid, key); and the ids this hub gave them.
        self.held_lines: dict[object, tuple[int, str, str, str]] = {}
        self.held_ids: dict[object, int] = {}
        # The held lines an event has named: each held write is decided once, by one event.
        self.held_named: set[object] = set()
        # Accounts whose policy line this restore has read: one line each.
        self.policy_owners: set[int] = set()
        self.default_privacy: dict[int, str] = {}
        self.now = timezone.now()

    def privacy(self, owner: User, named: str | None) -> str:
        """The class a restored entry takes: the one its line names, else its account's default."""
        if named is not None:
            return named
        if owner.pk not in self.default_privacy:
            self.default_privacy[owner.pk] = account_default_privacy(owner)
        return self.default_privacy[owner.pk]

    def account(self, username: object, field_name: str) -> User:
        if not isinstance(username, str) or not username:
            raise InvalidField(field_name, "must be a username.")
        if username not in self.accounts:
            self.accounts[username] = get_user_model().objects.filter(username=username).first()
        account = self.accounts[username]
        if account is not None:
            return account
        if not self.create_accounts:
            raise InvalidField(field_name, f"no account named {username!r} (create it, or pass --create-accounts).")
        try:
            account = account_create_locked(username=username)
        except ValidationError as error:
            raise InvalidField(
                field_name, f"{username!r} cannot be an account name: {'; '.join(error.messages)}"
            ) from None
        self.accounts[username] = account
        self.counts.accounts_created.append(username)
        return account

    def _unclaimed_with_data(self, pairs: set[tuple[int, str]]) -> set[tuple[int, str]]:
        """Of these (owner id, uid), the ones that already hold entries, history or held writes on this hub."""
        uids_by_owner: dict[int, list[str]] = {}
        for owner_id, uid in pairs:
            uids_by_owner.setdefault(owner_id, []).append(uid)
        taken: set[tuple[int, str]] = set()
        for owner_id, uids in uids_by_owner.items():
            for start in range(0, len(uids), IMPORT_LOOKUP_SIZE):
                part = uids[start : start + IMPORT_LOOKUP_SIZE]
                for model in (MemoryEntry, MemoryEvent, HeldWrite):
                    found = model.objects.filter(owner_id=owner_id, uid__in=part).values_list("uid", flat=True)
                    taken.update((owner_id, uid) for uid in found.distinct())
        return taken

    def round(self, lines: list[RestoreLine]) -> None:
        """Check one round of lines and, while nothing has been refused, insert them."""
        checked: list[tuple[int, User, RestoreEntry | RestoreEvent | RestoreHeld, object]] = []
        policies: list[tuple[User, RestorePolicy]] = []
        for line_number, item in lines:
            self.counts.lines += 1
            try:
                if isinstance(item, InvalidField):
                    raise item
                if isinstance(item, RestorePolicy):
                    _check_restore_policy(item)
                    policies.append((self._policy_owner(item), item))
                    continue
                actor: object
                if isinstance(item, RestoreEntry):
                    _check_restore_entry(item, now=self.now)
                    actor = None
                elif isinstance(item, RestoreHeld):
                    _check_restore_held(item, now=self.now)
                    actor = tuple(
                        None if name is None else self.account(name, field_name)
                        for name, field_name in ((item.requested_by, "requested_by"), (item.decided_by, "decided_by"))
                    )
                else:
                    _check_restore_event(item, now=self.now)
                    actor = None if item.actor is None else self.account(item.actor, "actor")
                owner = self.account(item.owner, "owner")
                self._check_held_reference(item, owner)
            except InvalidField as error:
                self.counts.refuse(line_number, error)
                continue
            checked.append((line_number, owner, item, actor))
        fresh = {(owner.pk, self._uid(item)) for _, owner, item, _ in checked} - self.claimed - self.conflicting
        taken = self._unclaimed_with_data(fresh)
        self.claimed |= fresh - taken
        entry_rows: list[tuple] = []
        event_rows: list[tuple] = []
        held_writes: list[tuple[object, HeldWrite]] = []
        restored: dict[int, tuple[User, list[MemoryEntry]]] = {}
        connection = transaction.get_connection()
        as_db_time = connection.ops.adapt_datetimefield_value
        meta_field = MemoryEntry._meta.get_field("meta")

        def as_db_json(value: dict | None) -> object:
            return None if value is None else meta_field.get_db_prep_save(value, connection)

        for line_number, owner, item, actor in checked:
            pair = (owner.pk, self._uid(item))
            if pair in taken:
                taken.discard(pair)
                self.conflicting.add(pair)
                self.counts.refuse(
                    line_number,
                    InvalidField(
                        "uid",
                        f"{pair[1]!r} of account {owner.get_username()!r} already has entries, history or held "
                        "writes on this hub; a backup with history is restored only into users that have none.",
                    ),
                )
                continue
            if pair in self.conflicting:
                continue
            if isinstance(item, RestoreHeld):
                assert isinstance(actor, tuple)
                requested_by, decided_by = actor
                held_writes.append(
                    (
                        item.backup_id,
                        HeldWrite(
                            owner=owner,
                            uid=item.uid,
                            key=item.key,
                            value=item.value,
                            kind=item.kind,
                            meta=item.meta,
                            privacy=item.privacy,
                            ttl=item.ttl,
                            expires=item.expires,
                            clears_expiry=item.clears_expiry,
                            expected_version=item.expected_version,
                            guard_flags=item.guard_flags,
                            requested_by=requested_by,
                            requested_at=item.requested_at,
                            status=item.status,
                            decided_by=decided_by,
                            decided_at=item.decided_at,
                            entry_version=item.entry_version,
                        ),
                    )
                )
            elif isinstance(item, RestoreEntry):
                record = item.record
                identity = (owner.pk, record.uid, record.key)
                if identity in self.entry_identities:
                    self.counts.refuse(line_number, InvalidField("key", f"{record.key!r} has an earlier entry line."))
                    continue
                self.entry_identities.add(identity)
                assert record.created is not None and record.updated is not None and record.version is not None
                session_id = new_honcho_session_id()
                privacy = self.privacy(owner, record.privacy)
                entry_rows.append(
                    (owner.pk, record.uid, record.key, record.value, record.kind, as_db_json(record.meta), privacy,
                     as_db_time(record.created), as_db_time(record.updated), record.version, session_id,
                     fold(record.key), fold(record.value),
                     # A backup is restored exactly, never held: the guard only marks what it would flag.
                     guard_decide(owner=owner, uid=record.uid, key=record.key, value=record.value).flags,
                     as_db_time(record.expires))
                )  # fmt: skip
                # What the sync outbox and the embedding marks read of a restored entry.
                restored.setdefault(owner.pk, (owner, []))[1].append(
                    MemoryEntry(
                        owner_id=owner.pk,
                        uid=record.uid,
                        key=record.key,
                        value=record.value,
                        kind=record.kind,
                        meta=record.meta,
                        privacy=privacy,
                        version=record.version,
                        honcho_session_id=session_id,
                    )
                )
            else:
                if item.action in (MemoryEvent.Action.CREATE, MemoryEvent.Action.UPDATE):
                    change = (owner.pk, item.uid, item.key, item.version)
                    if change in self.change_versions:
                        self.counts.refuse(
                            line_number,
                            InvalidField(
                                "version",
                                f"{item.key!r} has an earlier create or update event at version {item.version}: "
                                "a version names one state of a key.",
                            ),
                        )
                        continue
                    self.change_versions.add(change)
                event_rows.append(
                    (owner.pk, item.uid, item.key, item.action, item.version, item.value_before, item.value_after,
                     item.kind_before, item.kind_after, as_db_json(item.meta_before), as_db_json(item.meta_after),
                     item.privacy_before, item.privacy_after, as_db_time(item.created_before), item.entries_erased,
                     actor.pk if isinstance(actor, User) else None, as_db_time(item.at), item.held_write)
                )  # fmt: skip
        if self.counts.refused:
            return
        for owner, policy in policies:
            # Saved one by one, so the token cache hears of the change (post_save), as account_policy_set's would.
            AccountPolicy.objects.update_or_create(
                account=owner,
                defaults={
                    "default_privacy": policy.default_privacy,
                    "guard_mode": policy.guard_mode,
                    "context_includes_flagged": policy.context_includes_flagged,
                    "updated": self.now,
                },
            )
            self.default_privacy.pop(owner.pk, None)
        HeldWrite.objects.bulk_create([held for _, held in held_writes])
        self.held_ids.update((backup_id, held.pk) for backup_id, held in held_writes)
        # Each event's held write: the id the backup named, made the one this hub gave it.
        event_rows = [(*row[:-1], None if row[-1] is None else self.held_ids[row[-1]]) for row in event_rows]
        _bulk_insert(MemoryEntry._meta.db_table, ENTRY_IMPORT_COLUMNS, entry_rows)
        _bulk_insert(MemoryEvent._meta.db_table, RESTORE_EVENT_COLUMNS, event_rows)
        for owner, entries in restored.values():
            sync_outbox_record(owner=owner, entries=entries)
            embedding_mark_stale(entries)
        self.counts.entries += len(entry_rows)
        self.counts.events += len(event_rows)
        self.counts.policies += len(policies)
        self.counts.held += len(held_writes)

    def _check_held_reference(self, item: RestoreEntry | RestoreEvent | RestoreHeld, owner: User) -> None:
        """A held line's id is new to the backup; an event's held_write names a held line read before it, of the
        same account, user and key."""
        if isinstance(item, RestoreHeld):
            if item.backup_id in self.held_lines:
                raise InvalidField("id", f"held write {item.backup_id} has an earlier held line.")
            self.held_lines[item.backup_id] = (owner.pk, item.uid, item.key, item.status)
            return
        if not isinstance(item, RestoreEvent) or item.held_write is None:
            return
        held = self.held_lines.get(item.held_write)
        if held is None or held[:3] != (owner.pk, item.uid, item.key):
            raise InvalidField(
                "held_write", "must name a held line before it, of the same owner, uid and key (or be null)."
            )
        # The event that records a decision: a rejection's for a rejected write, a create or update for an
        # approved one, and one event for each.
        decided = HeldWrite.Status.REJECTED if item.action == MemoryEvent.Action.REJECT else HeldWrite.Status.APPROVED
        if item.action not in (MemoryEvent.Action.REJECT, MemoryEvent.Action.CREATE, MemoryEvent.Action.UPDATE) or (
            held[3] != decided
        ):
            raise InvalidField(
                "held_write", f"a {item.action} event cannot record the decision on a {held[3]} held write."
            )
        if item.held_write in self.held_named:
            raise InvalidField("held_write", f"held write {item.held_write} is named by an earlier event.")
        self.held_named.add(item.held_write)

    def _policy_owner(self, policy: RestorePolicy) -> User:
        """The account a policy line is for; refused when it had a line already or holds a different policy."""
        owner = self.account(policy.owner, "owner")
        if owner.pk in self.policy_owners:
            raise InvalidField("owner", f"{policy.owner!r} has an earlier policy line.")
        self.policy_owners.add(owner.pk)
        current = AccountPolicy.objects.filter(account=owner).first()
        if current is not None and _policy_differs(policy, current):
            raise InvalidField(
                "owner",
                f"{policy.owner!r} has a policy on this hub that differs from the backup's "
                f"(default privacy {current.default_privacy}, guard {current.guard_mode}, context flagged "
                f"{'yes' if current.context_includes_flagged else 'no'}); a restore does not overwrite it: "
                "make it the backup's with account_policy first.",
            )
        return owner

    @staticmethod
    def _uid(item: RestoreEntry | RestoreEvent | RestoreHeld) -> str:
        return item.record.uid if isinstance(item, RestoreEntry) else item.uid


def history_restore(
    *,
    lines: Iterable[RestoreLine],
    create_accounts: bool = False,
    dry_run: bool = False,
    chunk_size: int = RESTORE_CHUNK_SIZE,
    on_round: Callable[[int], None] | None = None,
) -> RestoreCounts:
    """Restore a backup with history: every account policy, entry and history event exactly as it was, or nothing.

    Entries keep their value, kind, meta, created, updated and version; events keep their action,
    values, version, time (at) and actor, and each key's events keep their order, so the next write
    to a key goes on from its last version (a deleted key included). Owners and actors are named by
    username and must exist here, or be made by create_accounts (with no usable password and no
    token: accounts.account_create_locked). Refused, each with its line: a line the reader could
    not parse (an InvalidField item), a field out of the hub's limits or a time in the future, a
    second entry line for one key, an account that does not exist, and a user (owner, uid) that
    already holds entries or history on this hub; and a policy line for an account that has an
    earlier one in the file, or that holds a different policy here (an account with no policy, or
    the same one, takes the backup's). Everything happens in one transaction: a refused line, or
    any error, leaves nothing written (the accounts made included, and their policies); dry_run
    checks and counts, then rolls back. on_round is called with the lines read after each round.
    """
    restore = _Restore(create_accounts=create_accounts)
    with transaction.atomic():
        pending: list[RestoreLine] = []
        for line in lines:
            pending.append(line)
            if len(pending) >= chunk_size:
                restore.round(pending)
                pending = []
                if on_round is not None:
                    on_round(restore.counts.lines)
        if pending:
            restore.round(pending)
        if on_round is not None:
            on_round(restore.counts.lines)
        if dry_run or restore.counts.refused:
            transaction.set_rollback(True)
    if restore.counts.refused:
        restore.counts.entries = restore.counts.events = 0
    return restore.counts


def search_statistics_refresh() -> None:
    """Bring the planner's statistics up to date after a bulk import, so the next search plans well.

    PostgreSQL: ANALYZE of the entry table (its size and word statistics weigh the ranking and
    guide the planner; right after a large import they are empty or stale, and a search could take
    a second), and the words index's pending list merged into it. SQLite: PRAGMA optimize, which
    analyses only what changed enough to need it, and both search indexes merged into one segment
    each (FTS5 'optimize'): a bulk load leaves many segments, each read by every search (a
    substring search took five times longer before the merge). The merge rewrites the indexes, a
    few seconds per 100,000 entries.
    """
    connection = transaction.get_connection()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"ANALYZE {connection.ops.quote_name(MemoryEntry._meta.db_table)}")
            # The search indexes' pending lists (GIN's fast update) merged in: a bulk load leaves thousands of
            # rows there, which every look-up of the index reads in full (a typo's look-ups took seconds, a
            # rare word's substring count 3.2 ms instead of 0.4).
            for index in POSTGRES_SEARCH_INDEXES:
                cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [index])
            # The word statistics just made weigh the next searches of this process at once.
            word_statistics_clear()
        else:
            # In a transaction of its own, which takes the writers' turn from its BEGIN (memoryhub.sqlite): in
            # autocommit PRAGMA optimize read first and, once another writer had committed, could not write
            # its statistics ("database is locked" at once, SQLite's busy timeout not waited).
            with transaction.atomic():
                cursor.execute("PRAGMA optimize")
            for index in SQLITE_SEARCH_INDEXES:
                cursor.execute(f"INSERT INTO {index}({index}) VALUES ('optimize')")
