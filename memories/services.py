"""The one write path for entries.

Every change to a MemoryEntry goes through a function here, in one transaction that also writes
the entry's history (MemoryEvent) and, when sync is on, its sync task (`sync_outbox_record`).
Views, the API, the admin, the tool endpoint and commands call these functions and nothing else
to write.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from memories.backends.base import PROBE_USERNAME
from memories.models import DEFAULT_KIND, MemoryEntry, MemoryEvent, SyncTask, new_honcho_session_id
from memories.sync import outbox
from memories.validation import InvalidField, check_key, check_kind, check_meta, check_uid, check_value


class EntryNotFound(LookupError):
    """No entry with that uid and key belongs to the account."""


class VersionConflict(Exception):
    """The entry's version is not the one the caller expected (If-Match)."""

    def __init__(self, current: int | None) -> None:
        super().__init__(f"current version is {current}" if current else "the entry does not exist")
        self.current = current


@dataclass(frozen=True)
class PutResult:
    entry: MemoryEntry
    created: bool
    changed: bool


def _locked_entry(*, owner: AbstractBaseUser, uid: str, key: str) -> MemoryEntry | None:
    return MemoryEntry.objects.select_for_update().filter(owner=owner, uid=uid, key=key).first()


def _check_expected(entry: MemoryEntry | None, expected_version: int | None) -> None:
    if expected_version is None:
        return
    current = entry.version if entry is not None else None
    if current != expected_version:
        raise VersionConflict(current)


def _event(
    entry: MemoryEntry, *, action: str, actor: AbstractBaseUser | None, before: MemoryEntry | None
) -> MemoryEvent:
    after = entry if action != MemoryEvent.Action.DELETE else None
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
        actor_id=actor.pk if actor is not None else entry.owner_id,
        at=timezone.now(),
    )


def sync_outbox_record(*, owner: AbstractBaseUser, entries: Sequence[MemoryEntry], deleted: bool = False) -> None:
    """Queue these entries of `owner` for Honcho: call it in the transaction that changed them.

    Every service that creates, changes or deletes entries calls this once, after writing them
    (deleted=True when they are gone), with the entries as they are now. With sync off it returns at
    once, with no query; with sync on it is one statement per 500 entries. The evaluation's probe
    account is never mirrored.
    """
    if not settings.MEMORYHUB_HONCHO_SYNC or not entries or owner.get_username() == PROBE_USERNAME:
        return
    operation = SyncTask.Operation.DELETE if deleted else SyncTask.Operation.UPSERT
    outbox.tasks_record(entries, operation=operation, now=timezone.now())


def _snapshot(entry: MemoryEntry) -> MemoryEntry:
    return MemoryEntry(value=entry.value, kind=entry.kind, meta=entry.meta)


def _apply_change(
    entry: MemoryEntry,
    *,
    owner: AbstractBaseUser,
    value: str | None,
    kind: str | None,
    meta: dict | None,
    actor: AbstractBaseUser | None,
) -> PutResult:
    before = _snapshot(entry)
    new_value = entry.value if value is None else value
    new_kind = entry.kind if kind is None else kind
    new_meta = entry.meta if meta is None else meta
    if (new_value, new_kind, new_meta) == (entry.value, entry.kind, entry.meta):
        return PutResult(entry=entry, created=False, changed=False)
    entry.value, entry.kind, entry.meta = new_value, new_kind, new_meta
    entry.version += 1
    entry.updated = timezone.now()
    entry.save(update_fields=["value", "kind", "meta", "version", "updated"])
    _event(entry, action=MemoryEvent.Action.UPDATE, actor=actor, before=before).save()
    sync_outbox_record(owner=owner, entries=[entry])
    return PutResult(entry=entry, created=False, changed=True)


def entry_put(
    *,
    owner: AbstractBaseUser,
    uid: str,
    key: str,
    value: str,
    kind: str | None = None,
    meta: dict | None = None,
    actor: AbstractBaseUser | None = None,
    expected_version: int | None = None,
) -> PutResult:
    """Create the entry (owner, uid, key) or replace its value.

    kind and meta left as None keep what the entry has (or the defaults on creation). A put that
    changes nothing records nothing and keeps the version. actor is the account that made the
    change (the owner when None). With expected_version, the write happens only when the entry is
    at that version, else VersionConflict. Raises InvalidField for bad input.
    """
    check_uid(uid)
    check_key(key)
    check_value(value)
    if kind is not None:
        check_kind(kind)
    if meta is not None:
        check_meta(meta)
    with transaction.atomic():
        entry = _locked_entry(owner=owner, uid=uid, key=key)
        _check_expected(entry, expected_version)
        if entry is None:
            now = timezone.now()
            entry = MemoryEntry(
                owner=owner,
                uid=uid,
                key=key,
                value=value,
                kind=kind or DEFAULT_KIND,
                meta=meta if meta is not None else {},
                created=now,
                updated=now,
                version=1,
                honcho_session_id=new_honcho_session_id(),
            )
            try:
                with transaction.atomic():
                    entry.save(force_insert=True)
            except IntegrityError:
                # A concurrent writer created the same entry between our read and our insert
                # (possible on PostgreSQL): apply this write on top of theirs.
                entry = _locked_entry(owner=owner, uid=uid, key=key)
                if entry is None:
                    raise
            else:
                _event(entry, action=MemoryEvent.Action.CREATE, actor=actor, before=None).save()
                sync_outbox_record(owner=owner, entries=[entry])
                return PutResult(entry=entry, created=True, changed=True)
        return _apply_change(entry, owner=owner, value=value, kind=kind, meta=meta, actor=actor)


def entry_update(
    *,
    owner: AbstractBaseUser,
    uid: str,
    key: str,
    value: str | None = None,
    kind: str | None = None,
    meta: dict | None = None,
    actor: AbstractBaseUser | None = None,
    expected_version: int | None = None,
) -> PutResult:
    """Change some fields of an existing entry; raises EntryNotFound when there is none."""
    if value is not None:
        check_value(value)
    if kind is not None:
        check_kind(kind)
    if meta is not None:
        check_meta(meta)
    with transaction.atomic():
        entry = _locked_entry(owner=owner, uid=uid, key=key)
        if entry is None and expected_version is None:
            raise EntryNotFound(f"{uid}/{key}")
        _check_expected(entry, expected_version)
        return _apply_change(entry, owner=owner, value=value, kind=kind, meta=meta, actor=actor)


def entry_delete(
    *,
    owner: AbstractBaseUser,
    uid: str,
    key: str,
    actor: AbstractBaseUser | None = None,
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


def user_forget(*, owner: AbstractBaseUser, uid: str, actor: AbstractBaseUser | None = None) -> int:
    """Delete every entry the account holds about uid; the history stays. Returns how many went."""
    with transaction.atomic():
        entries = list(MemoryEntry.objects.select_for_update().filter(owner=owner, uid=uid).order_by("pk"))
        if not entries:
            return 0
        MemoryEvent.objects.bulk_create(
            _event(entry, action=MemoryEvent.Action.DELETE, actor=actor, before=entry) for entry in entries
        )
        sync_outbox_record(owner=owner, entries=entries, deleted=True)
        MemoryEntry.objects.filter(owner=owner, uid=uid).delete()
        return len(entries)


def probe_data_clear(*, owner: AbstractBaseUser, uid: str) -> int:
    """Remove every entry and history row of one evaluation run's uid of the reserved probe account.

    Probe data is the evaluation's scaffolding, not anyone's memories, so it leaves no history
    behind. Each run has a uid of its own, so runs at the same time never clear each other's data.
    Refuses (ValueError) any other account. Returns how many entries went.
    """
    if owner.get_username() != PROBE_USERNAME:
        raise ValueError(f"only the probe account {PROBE_USERNAME!r} can be cleared")
    with transaction.atomic():
        deleted, _ = MemoryEntry.objects.filter(owner=owner, uid=uid).delete()
        MemoryEvent.objects.filter(owner=owner, uid=uid).delete()
    return deleted


class EntryExists(Exception):
    """The entry is there already: there is nothing to restore."""


def entry_restore(*, owner: AbstractBaseUser, uid: str, key: str, actor: AbstractBaseUser | None = None) -> MemoryEntry:
    """Bring back a deleted entry as it was when it was last deleted.

    The restored entry keeps its value, kind, meta and creation time, and its version goes on from
    the deleted one (deleted at version N, restored at N + 1), so every version of (uid, key) names
    one state. The history records the restore as a "create" event at that version. Raises
    EntryNotFound when the history holds no deletion of (uid, key) to undo, and EntryExists when
    the entry is there (restoring would overwrite it).
    """
    with transaction.atomic():
        if _locked_entry(owner=owner, uid=uid, key=key) is not None:
            raise EntryExists(f"{uid}/{key}")
        deletion = MemoryEvent.objects.filter(owner=owner, uid=uid, key=key).order_by("-id").first()
        if deletion is None or deletion.action != MemoryEvent.Action.DELETE:
            raise EntryNotFound(f"{uid}/{key}")
        creation = (
            MemoryEvent.objects.filter(
                owner=owner, uid=uid, key=key, action=MemoryEvent.Action.CREATE, id__lt=deletion.id
            )
            .order_by("-id")
            .values_list("at", flat=True)
            .first()
        )
        now = timezone.now()
        entry = MemoryEntry(
            owner=owner,
            uid=uid,
            key=key,
            value=deletion.value_before or "",
            kind=deletion.kind_before or DEFAULT_KIND,
            meta=deletion.meta_before if deletion.meta_before is not None else {},
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
        return entry


BATCH_MAX_OPERATIONS = 500
# The largest version a PositiveIntegerField holds on every database.
IMPORT_MAX_VERSION = 2_147_483_647
# Keys looked up per query when an import checks which entries exist.
IMPORT_LOOKUP_SIZE = 500


class BatchOp(models.TextChoices):
    PUT = "put", "put"
    DELETE = "delete", "delete"


@dataclass(frozen=True)
class BatchOperation:
    """One put or delete in a batch; value is required for a put."""

    op: str
    key: str
    value: str | None = None
    kind: str | None = None
    meta: dict | None = None
    expected_version: int | None = None


@dataclass(frozen=True)
class BatchOutcome:
    """What one operation did: status is created, updated, unchanged, deleted or absent."""

    op: str
    key: str
    status: str
    entry: MemoryEntry | None


class BatchRejected(Exception):
    """At least one operation of a batch failed, so none was applied.

    errors maps the index of each failed operation to {field: [message, ...]}, the shape DRF
    gives a list of serializers.
    """

    def __init__(self, errors: dict[int, dict[str, list[str]]]) -> None:
        super().__init__(f"{len(errors)} operations failed; none was applied")
        self.errors = errors


def _batch_operation_errors(operation: BatchOperation) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    checks: list[tuple] = [(check_key, operation.key)]
    if operation.op == BatchOp.PUT:
        checks.append((check_value, operation.value))
        if operation.kind is not None:
            checks.append((check_kind, operation.kind))
        if operation.meta is not None:
            checks.append((check_meta, operation.meta))
    elif operation.op != BatchOp.DELETE:
        errors["op"] = [f"must be one of {', '.join(BatchOp.values)}."]
    for check, field_value in checks:
        try:
            check(field_value)
        except InvalidField as error:
            errors.setdefault(error.field, []).append(error.message)
    if operation.expected_version is not None and (
        not isinstance(operation.expected_version, int) or operation.expected_version < 1
    ):
        errors["expected_version"] = ["must be a whole number of at least 1."]
    return errors


def entries_batch(
    *,
    owner: AbstractBaseUser,
    uid: str,
    operations: list[BatchOperation],
    actor: AbstractBaseUser | None = None,
) -> list[BatchOutcome]:
    """Apply up to BATCH_MAX_OPERATIONS puts and deletes to one user's entries, all or none.

    Operations run in order, in one transaction, each exactly as entry_put or entry_delete would
    (history included); a delete of a missing entry is "absent", not an error. Any invalid
    operation or version conflict raises BatchRejected with per-operation errors, and nothing is
    written. Raises InvalidField for a bad uid or a batch of the wrong size.
    """
    check_uid(uid)
    if not 1 <= len(operations) <= BATCH_MAX_OPERATIONS:
        raise InvalidField("operations", f"must hold 1 to {BATCH_MAX_OPERATIONS} operations; got {len(operations)}.")
    errors = {
        index: operation_errors
        for index, operation in enumerate(operations)
        if (operation_errors := _batch_operation_errors(operation))
    }
    if errors:
        raise BatchRejected(errors)
    outcomes: list[BatchOutcome] = []
    with transaction.atomic():
        for index, operation in enumerate(operations):
            try:
                if operation.op == BatchOp.PUT:
                    result = entry_put(
                        owner=owner,
                        uid=uid,
                        key=operation.key,
                        value=operation.value,
                        kind=operation.kind,
                        meta=operation.meta,
                        actor=actor,
                        expected_version=operation.expected_version,
                    )
                    status = "created" if result.created else "updated" if result.changed else "unchanged"
                    outcomes.append(BatchOutcome(op=operation.op, key=operation.key, status=status, entry=result.entry))
                else:
                    deleted = entry_delete(
                        owner=owner,
                        uid=uid,
                        key=operation.key,
                        actor=actor,
                        expected_version=operation.expected_version,
                    )
                    status = "deleted" if deleted is not None else "absent"
                    outcomes.append(BatchOutcome(op=operation.op, key=operation.key, status=status, entry=None))
            except VersionConflict as conflict:
                # Leaving the atomic block by an exception rolls back every operation already applied.
                raise BatchRejected({index: {"expected_version": [str(conflict)]}}) from None
    return outcomes


@dataclass(frozen=True)
class ImportRecord:
    """One entry as an export file holds it. Timestamps and version left as None get defaults."""

    uid: str
    key: str
    value: str
    kind: str = DEFAULT_KIND
    meta: dict = field(default_factory=dict)
    created: datetime | None = None
    updated: datetime | None = None
    version: int | None = None


@dataclass
class ImportCounts:
    """What an import did (or, in a dry run, would do). invalid holds (record index, error)."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0
    invalid: list[tuple[int, InvalidField]] = field(default_factory=list)


def _check_import_record(record: ImportRecord) -> None:
    check_uid(record.uid)
    check_key(record.key)
    check_value(record.value)
    check_kind(record.kind)
    check_meta(record.meta)
    for name in ("created", "updated"):
        moment = getattr(record, name)
        if moment is not None and (not isinstance(moment, datetime) or timezone.is_naive(moment)):
            raise InvalidField(name, "must be a date and time with a time zone (ISO 8601).")
    if record.created and record.updated and record.created > record.updated:
        raise InvalidField("created", "must not be later than updated.")
    if record.version is not None and (
        isinstance(record.version, bool)
        or not isinstance(record.version, int)
        or not 1 <= record.version <= IMPORT_MAX_VERSION
    ):
        raise InvalidField("version", f"must be a whole number from 1 to {IMPORT_MAX_VERSION}.")


def _existing_entries(*, owner: AbstractBaseUser, identities: list[tuple[str, str]], lock: bool) -> dict:
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


ENTRY_IMPORT_COLUMNS = (
    "owner_id", "uid", "key", "value", "kind", "meta", "created", "updated", "version", "honcho_session_id",
)  # fmt: skip
EVENT_IMPORT_COLUMNS = (
    "owner_id", "uid", "key", "action", "version", "value_before", "value_after", "kind_before", "kind_after",
    "meta_before", "meta_after", "actor_id", "at",
)  # fmt: skip
# Parameters per INSERT statement on the bulk path: inside both SQLite's limit (32,766 since 3.32)
# and PostgreSQL's (65,535). Fewer, larger statements matter on SQLite: the full-text index is
# flushed once per statement, not once per row.
BULK_INSERT_PARAMETERS = 30_000


def _bulk_insert(table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    """INSERT rows already in database form, in multi-row statements.

    The import's hot path: building model instances and converting each value through its field,
    as bulk_create does, took most of an import's time; here only datetimes and JSON are converted
    (by entries_import), once.
    """
    connection = transaction.get_connection()
    quote = connection.ops.quote_name
    column_list = ", ".join(quote(column) for column in columns)
    placeholders = "(" + ", ".join(["%s"] * len(columns)) + ")"
    rows_per_statement = BULK_INSERT_PARAMETERS // len(columns)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), rows_per_statement):
            part = rows[start : start + rows_per_statement]
            cursor.execute(
                f"INSERT INTO {quote(table)} ({column_list}) VALUES {', '.join([placeholders] * len(part))}",
                [value for row in part for value in row],
            )


def entries_import(
    *,
    owner: AbstractBaseUser,
    records: list[ImportRecord],
    actor: AbstractBaseUser | None = None,
    dry_run: bool = False,
) -> ImportCounts:
    """Upsert one chunk of records into the account's entries, in one transaction, with history.

    The bulk path for imports and restores: every record is checked as entry_put checks it;
    invalid ones are skipped and reported in ImportCounts.invalid, the rest are written with bulk
    inserts. Timestamps and versions:
    - a record for a new entry keeps its created, updated and version (a restore is exact);
      missing ones default to now, now and 1;
    - a record equal in value, kind and meta to the entry already here changes nothing;
    - a record that differs updates the entry as a put would: created stays, updated is now, and
      the version becomes the larger of (current + 1) and the record's, so it never goes back and
      If-Match holders see the change.
    Each create or update writes one history event (at = now, actor = actor or the owner). A later
    record for the same uid and key in the chunk wins over an earlier one. dry_run counts and
    writes nothing.
    """
    counts = ImportCounts()
    latest: dict[tuple[str, str], ImportRecord] = {}
    for index, record in enumerate(records):
        try:
            _check_import_record(record)
        except InvalidField as error:
            counts.invalid.append((index, error))
            continue
        latest.pop((record.uid, record.key), None)
        latest[(record.uid, record.key)] = record
    if not latest:
        return counts
    now = timezone.now()
    actor_id = actor.pk if actor is not None else owner.pk
    with transaction.atomic():
        existing = _existing_entries(owner=owner, identities=list(latest), lock=not dry_run)
        connection = transaction.get_connection()
        as_db_time = connection.ops.adapt_datetimefield_value
        meta_field = MemoryEntry._meta.get_field("meta")

        def as_db_json(value: dict | None) -> object:
            return None if value is None else meta_field.get_db_prep_save(value, connection)

        db_now = as_db_time(now)
        new_rows: list[tuple] = []
        event_rows: list[tuple] = []
        changed_entries: list[MemoryEntry] = []
        created_entries: list[MemoryEntry] = []
        for identity, record in latest.items():
            entry = existing.get(identity)
            if entry is None:
                created = record.created or record.updated or now
                updated = record.updated or max(created, now)
                version = record.version or 1
                meta = as_db_json(record.meta)
                session_id = new_honcho_session_id()
                new_rows.append(
                    (owner.pk, record.uid, record.key, record.value, record.kind, meta,
                     as_db_time(created), as_db_time(updated), version, session_id)
                )  # fmt: skip
                # What the sync outbox reads of a created entry: its identity, version and session.
                created_entries.append(
                    MemoryEntry(
                        owner_id=owner.pk, uid=record.uid, key=record.key, version=version, honcho_session_id=session_id
                    )
                )
                event_rows.append(
                    (owner.pk, record.uid, record.key, MemoryEvent.Action.CREATE.value, version, None, record.value,
                     None, record.kind, None, meta, actor_id, db_now)
                )  # fmt: skip
            elif (entry.value, entry.kind, entry.meta) == (record.value, record.kind, record.meta):
                counts.unchanged += 1
            else:
                event_rows.append(
                    (owner.pk, record.uid, record.key, MemoryEvent.Action.UPDATE.value,
                     max(entry.version + 1, record.version or 1), entry.value, record.value, entry.kind, record.kind,
                     as_db_json(entry.meta), as_db_json(record.meta), actor_id, db_now)
                )  # fmt: skip
                entry.value, entry.kind, entry.meta = record.value, record.kind, record.meta
                entry.version = max(entry.version + 1, record.version or 1)
                entry.updated = now
                changed_entries.append(entry)
        counts.created += len(new_rows)
        counts.updated += len(changed_entries)
        if dry_run:
            return counts
        _bulk_insert(MemoryEntry._meta.db_table, ENTRY_IMPORT_COLUMNS, new_rows)
        if changed_entries:
            MemoryEntry.objects.bulk_update(changed_entries, ["value", "kind", "meta", "version", "updated"])
        _bulk_insert(MemoryEvent._meta.db_table, EVENT_IMPORT_COLUMNS, event_rows)
        sync_outbox_record(owner=owner, entries=created_entries + changed_entries)
    return counts
