"""Entries read by fixed SQL: the columns and their converters worked out once per process, not per query.

The ORM compiles every QuerySet into SQL again on each request, and on a PUT or a page of entries that
compiling was the largest cost (more than the database's own work). The few hot reads that always
have the same shape (the PUT's locked read; a page of a user's entries) write their SQL once with
these helpers and turn each row into a MemoryEntry exactly as the ORM would: the same fields, the
same database converters, the same state (saved, in this database).
"""

import functools
import json
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, tzinfo
from typing import Any

from django.db import connection
from django.db.models import Field, Model
from django.db.models.base import ModelState
from django.db.models.expressions import Col
from django.utils.dateparse import parse_datetime

from memories.models import MemoryEntry

Converter = Callable[[Any, Any, Any], Any]


def quote(name: str) -> str:
    return connection.ops.quote_name(name)


def entry_fields() -> tuple[Field, ...]:
    """MemoryEntry's columns, in the order Model.from_db takes them."""
    return tuple(MemoryEntry._meta.concrete_fields)


@functools.cache
def _attribute_names() -> tuple[str, ...]:
    return tuple(field.attname for field in entry_fields())


def entry_columns(table_alias: str) -> str:
    """Every column of an entry, qualified by table_alias, for a SELECT list."""
    # A concrete field always has its column.
    return ", ".join(f"{table_alias}.{quote(str(field.column))}" for field in entry_fields())


@functools.cache
def _converters(vendor: str) -> tuple[tuple[int, Col, tuple[Converter, ...]], ...]:
    """The columns of entry_fields() that the ORM converts on this database: (index, column, converters),
    found as its compiler finds them (the backend's, then the field's)."""
    table = MemoryEntry._meta.db_table
    found = []
    for index, field in enumerate(entry_fields()):
        column = field.get_col(table)
        converters = tuple(connection.ops.get_db_converters(column)) + tuple(column.get_db_converters(connection))
        if converters:
            found.append((index, column, converters))
    return tuple(found)


def entries_from_rows(rows: Iterable[Sequence[Any]]) -> list[MemoryEntry]:
    """The entries of rows whose first columns are entry_fields()' in order (later columns are left out), as a
    QuerySet would have built them: each value through the ORM's converters, the entry saved in this database.

    The entry is filled as Model.from_db fills it, without running Model.__init__ per row (a third of
    a page's cost): MemoryEntry has no field whose __init__ does more than store the value, and no
    receiver of pre_init or post_init (tests/memories/test_rows.py compares the result with the ORM's).
    """
    converters = _converters(connection.vendor)
    names = _attribute_names()
    width = len(names)
    alias = connection.alias
    entries = []
    for row in rows:
        values = list(row[:width])
        for index, column, column_converters in converters:
            value = values[index]
            for convert in column_converters:
                value = convert(value, column, connection)
            values[index] = value
        entry = MemoryEntry.__new__(MemoryEntry)
        entry.__dict__.update(zip(names, values, strict=True))
        state = ModelState()
        state.adding, state.db = False, alias
        entry._state = state
        entries.append(entry)
    return entries


# What an entry shows (the API's EntrySerializer fields, guard_flags as stored), in that order: a page of
# entries reads these columns alone and is written from them without building a MemoryEntry per row.
SHOWN_COLUMNS = (
    "uid", "key", "value", "kind", "meta", "privacy", "version", "created", "updated", "guard_flags", "expires",
)  # fmt: skip
_SHOWN_META = SHOWN_COLUMNS.index("meta")
_MOMENT_COLUMNS = ("created", "updated", "expires")
_SHOWN_MOMENTS = tuple(SHOWN_COLUMNS.index(name) for name in _MOMENT_COLUMNS)


def shown_columns(table_alias: str) -> str:
    """SHOWN_COLUMNS qualified by table_alias, for a SELECT list.

    The datetimes are read as text, which datetime.fromisoformat parses in C (shown_values): the
    drivers' own datetime parsers are Python (Django's sqlite3 converter, and on PostgreSQL its time
    zone loader, a subclass of psycopg's Python one), and were a tenth of a page's cost.
    """
    return ", ".join(
        f"CAST({table_alias}.{quote(name)} AS TEXT)" if name in _MOMENT_COLUMNS else f"{table_alias}.{quote(name)}"
        for name in SHOWN_COLUMNS
    )


def _json_value(value: Any) -> Any:  # noqa: ANN401 - whatever the JSON holds
    # As JSONField.from_db_value (no decoder): text that is not JSON stays as it is.
    if not isinstance(value, str):
        return value
    if value == "{}":
        return {}
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def _aware_moment(value: Any, zone: tzinfo | None) -> datetime | None:  # noqa: ANN401 - a column's raw value
    """A datetime column's value as the ORM gives it: aware, in zone (the connection's) when stored without one.
    Text (shown_columns reads it so: SQLite's as stored, PostgreSQL's with its offset) is read by
    datetime.fromisoformat, and anything it cannot read by the ORM's own parser."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            value = parse_datetime(value)
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=zone)
    return value


def shown_values(rows: Iterable[Sequence[Any]]) -> list[tuple[Any, ...]]:
    """Rows whose first columns are SHOWN_COLUMNS' in order (later columns are left out), each value as the ORM
    would have converted it: meta decoded from JSON, the datetimes aware. tests/memories/test_rows.py compares
    them with the ORM's entries."""
    zone = connection.timezone
    width = len(SHOWN_COLUMNS)
    shown = []
    for row in rows:
        values = list(row[:width])
        values[_SHOWN_META] = _json_value(values[_SHOWN_META])
        for index in _SHOWN_MOMENTS:
            values[index] = _aware_moment(values[index], zone)
        shown.append(tuple(values))
    return shown


def entry_shown_values(entry: MemoryEntry) -> tuple[Any, ...]:
    """An entry's values of SHOWN_COLUMNS, as shown_values gives them of its row."""
    return tuple(getattr(entry, name) for name in SHOWN_COLUMNS)


def entry_from_row(row: Sequence[Any]) -> MemoryEntry:
    """The entry of one row (entries_from_rows)."""
    return entries_from_rows([row])[0]


@functools.lru_cache(maxsize=16)
def _insert_sql(model: type[Model], vendor: str, conflict: tuple[str, ...]) -> tuple[str, tuple[Field, ...]]:
    """INSERT of one new row of model (every concrete field but its auto primary key) returning that key,
    with ON CONFLICT (conflict) DO NOTHING when conflict names columns; and the fields in VALUES' order."""
    meta = model._meta
    fields = tuple(
        field
        for field in meta.local_concrete_fields
        if field is not meta.auto_field and not getattr(field, "generated", False)
    )
    columns = ", ".join(quote(str(field.column)) for field in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    on_conflict = f" ON CONFLICT ({', '.join(quote(column) for column in conflict)}) DO NOTHING" if conflict else ""
    returning = quote(str(meta.pk.column))
    return (
        f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({placeholders}){on_conflict} RETURNING {returning}",
        fields,
    )


def row_insert(instance: Model, *, unless_conflict_on: tuple[str, ...] = ()) -> bool:
    """Insert a new instance, as instance.save(force_insert=True) would, in one statement of SQL written once
    per model: each field's pre_save (a folded copy, say) and database preparation, the new primary key set on
    it, the instance then saved in this database. Sends no pre_save or post_save signal: for the write path's
    own rows (entries, their history), which no receiver listens to.

    unless_conflict_on: columns of a unique constraint; when a row with the same values is there already
    (a concurrent writer's, on PostgreSQL), nothing is inserted and False is returned, with no error to
    roll back (ON CONFLICT DO NOTHING: no savepoint needed). True when the row was inserted.
    """
    if instance.pk is not None:
        raise ValueError(f"{instance!r} has its primary key already: row_insert inserts new rows only")
    sql, fields = _insert_sql(type(instance), connection.vendor, unless_conflict_on)
    values = [field.get_db_prep_save(field.pre_save(instance, True), connection) for field in fields]
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        returned = cursor.fetchone()
    if returned is None:
        return False
    instance.pk = returned[0]
    instance._state.adding, instance._state.db = False, connection.alias
    return True
