"""Entries read by fixed SQL: the columns and their converters worked out once per process, not per query.

The ORM compiles every QuerySet into SQL again on each request, and on a PUT or a page of entries that
compiling was the largest cost (more than the database's own work). The few hot reads that always
have the same shape (the PUT's locked read; a page of a user's entries) write their SQL once with
these helpers and turn each row into a MemoryEntry exactly as the ORM would: the same fields, the
same database converters, the same state (saved, in this database).
"""

import functools
import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Following:
    """A row that row_insert (row_update) inserts with a new (changed) row, and only when that row is written:
    `instance`, whose field named `takes_key` (when given) is set to the written row's primary key. With
    `replaces`, a row already there with the same primary key takes these fields from it instead."""

    instance: Model
    takes_key: str | None = None
    replaces: tuple[str, ...] = ()
    # (field of instance, field of the written row): fields set to the value the database worked out for the
    # written row's Computed field (the only field of it a following row may take, besides its key).
    takes: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Computed:
    """A field of a row row_insert inserts whose value the database computes as it inserts the row: `sql`, an
    expression (a subquery, say) with `params`. The instance's field is set to the value written."""

    field: str
    sql: str
    params: tuple[Any, ...] = ()


@functools.lru_cache(maxsize=16)
def _insert_sql(
    model: type[Model],
    vendor: str,
    conflict: tuple[str, ...],
    replaces: tuple[str, ...] = (),
    computed: tuple[str, str] | None = None,
    unless_read: str | None = None,
) -> tuple[str, tuple[Field, ...]]:
    """INSERT of one new row of model (every concrete field but its auto primary key) returning that key,
    with ON CONFLICT (conflict) DO NOTHING when conflict names columns, or when replaces names fields, ON
    CONFLICT on the primary key DO UPDATE those fields; and the fields in VALUES' order. computed, a field's
    name and an SQL expression, writes that expression in the field's place and returns the field after the
    key (its parameters go where the field's value would). unless_read, a SELECT: the row is inserted only when
    it reads none (its parameters follow the fields')."""
    meta = model._meta
    fields = _inserted_fields(model)
    columns = ", ".join(quote(str(field.column)) for field in fields)

    def placeholder(field: Field) -> str:
        if computed is not None and field.name == computed[0]:
            return f"({computed[1]})"
        # Selected values have no column to take their type from, as VALUES' do: each is cast to its column's.
        return f"CAST(%s AS {_cast_type(field)})" if unless_read is not None else "%s"

    placeholders = ", ".join(placeholder(field) for field in fields)
    on_conflict = _on_conflict(model, conflict, replaces)
    returning = quote(str(meta.pk.column))
    if computed is not None:
        returning += f", {quote(str(_concrete_field(model, computed[0]).column))}"
    rows = (
        f"VALUES ({placeholders})" if unless_read is None else f"SELECT {placeholders} WHERE NOT EXISTS ({unless_read})"
    )
    sql = f"INSERT INTO {quote(meta.db_table)} ({columns}) {rows}{on_conflict} RETURNING {returning}"
    return sql, fields


def _inserted_fields(model: type[Model]) -> tuple[Field, ...]:
    meta = model._meta
    return tuple(
        field
        for field in meta.local_concrete_fields
        if field is not meta.auto_field and not getattr(field, "generated", False)
    )


def _on_conflict(model: type[Model], conflict: tuple[str, ...], replaces: tuple[str, ...]) -> str:
    if conflict:
        return f" ON CONFLICT ({', '.join(quote(column) for column in conflict)}) DO NOTHING"
    if replaces:
        columns = [quote(str(_concrete_field(model, name).column)) for name in replaces]
        updates = ", ".join(f"{column} = excluded.{column}" for column in columns)
        return f" ON CONFLICT ({quote(str(model._meta.pk.column))}) DO UPDATE SET {updates}"
    return ""


def _concrete_field(model: type[Model], name: str) -> Field:
    field = model._meta.get_field(name)
    if not isinstance(field, Field) or not field.concrete:
        raise ValueError(f"{model.__name__}.{name} is not a column")
    return field


@functools.lru_cache(maxsize=16)
def _update_sql(
    model: type[Model], fields: tuple[str, ...], unchanged: tuple[str, ...] = ()
) -> tuple[str, tuple[Field, ...]]:
    """UPDATE of these fields of one row, found by its primary key (and, for each field named in unchanged, its
    value: a parameter each, after the key's), returning that key; and the fields."""
    meta = model._meta
    updated = tuple(_concrete_field(model, name) for name in fields)
    assignments = ", ".join(f"{quote(str(field.column))} = %s" for field in updated)
    pk = quote(str(meta.pk.column))
    still = "".join(f" AND {quote(str(_concrete_field(model, name).column))} = %s" for name in unchanged)
    return f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {pk} = %s{still} RETURNING {pk}", updated


@functools.lru_cache(maxsize=16)
def _with_following_sql(
    first: str,
    model: type[Model],
    following: tuple[tuple[type[Model], str | None, tuple[str, ...], tuple[tuple[str, str], ...]], ...],
    computed: str | None = None,
) -> str:
    """PostgreSQL: the statement `first` (an INSERT or UPDATE of one row of model, returning its key, and the
    field named computed after it when given) and, as data-modifying WITH queries of the same statement, one
    INSERT per following row, each selecting from first's row (so nothing follows a row not written), its
    `takes` fields from that row's; the statement returns first's row's key and computed field (NULL when it
    wrote none), then the following rows' keys."""
    written = quote("written")

    def written_column(name: str) -> str:
        return f"{written}.{quote(str(_concrete_field(model, name).column))}"

    key = f"{written}.{quote(str(model._meta.pk.column))}"
    parts = [f"{written} AS ({first})"]
    keys = [f"(SELECT {key} FROM {written})"]
    if computed is not None:
        keys.append(f"(SELECT {written_column(computed)} FROM {written})")
    for index, (follower, takes_key, replaces, takes) in enumerate(following):
        name = quote(f"following_{index}")
        meta = follower._meta
        fields = _inserted_fields(follower)
        taken = dict(takes)
        # Selected values have no column to take their type from, as VALUES' do: each is cast to its column's.
        selected = ", ".join(
            key
            if field.name == takes_key
            else written_column(taken[field.name])
            if field.name in taken
            else f"CAST(%s AS {_cast_type(field)})"
            for field in fields
        )
        columns = ", ".join(quote(str(field.column)) for field in fields)
        pk = quote(str(meta.pk.column))
        parts.append(
            f"{name} AS (INSERT INTO {quote(meta.db_table)} ({columns}) SELECT {selected} FROM {written}"
            f"{_on_conflict(follower, (), replaces)} RETURNING {pk})"
        )
        keys.append(f"(SELECT {pk} FROM {name})")
    return f"WITH {', '.join(parts)} SELECT {', '.join(keys)}"


def _cast_type(field: Field) -> str:
    # A value too long for its column fails on assignment; a cast to varchar(n) would cut it silently.
    return re.sub(r"^(character varying|varchar)\(\d+\)$", "varchar", str(field.db_type(connection)))


def _prepared(
    instance: Model, fields: Sequence[Field], *, leave_out: Collection[str] = (), add: bool = True
) -> list[Any]:
    return [
        field.get_db_prep_save(field.pre_save(instance, add), connection)
        for field in fields
        if field.name not in leave_out
    ]


def _prepared_computed(instance: Model, fields: Sequence[Field], computed: Computed | None) -> list[Any]:
    """_prepared(instance, fields), with computed's parameters in the place of its field's value."""
    if computed is None:
        return _prepared(instance, fields)
    values: list[Any] = []
    for field in fields:
        if field.name == computed.field:
            values += computed.params
        else:
            values.append(field.get_db_prep_save(field.pre_save(instance, True), connection))
    return values


def _saved(instance: Model, pk: object) -> None:
    instance.pk = pk
    instance._state.adding, instance._state.db = False, connection.alias


def row_insert(
    instance: Model,
    *,
    unless_conflict_on: tuple[str, ...] = (),
    following: Sequence[Following] = (),
    computed: Computed | None = None,
) -> bool:
    """Insert a new instance, as instance.save(force_insert=True) would, in one statement of SQL written once
    per model: each field's pre_save (a folded copy, say) and database preparation, the new primary key set on
    it, the instance then saved in this database. Sends no pre_save or post_save signal: for the write path's
    own rows (entries, their history), which no receiver listens to.

    unless_conflict_on: columns of a unique constraint; when a row with the same values is there already
    (a concurrent writer's, on PostgreSQL), nothing is inserted and False is returned, with no error to
    roll back (ON CONFLICT DO NOTHING: no savepoint needed). True when the row was inserted.

    following: rows inserted after it, and only when it is inserted (its history event, say), each with its
    primary key set. On PostgreSQL they go in the same statement, so a write pays one round trip for them
    all; on SQLite, where a statement is a call into the same process, one statement each.

    computed: a field whose value the database works out as it inserts the row (Computed), set on the instance
    from what was written, and on the following rows' fields that take it (Following.takes).
    """
    return row_insert_prepare(
        instance, unless_conflict_on=unless_conflict_on, following=following, computed=computed
    ).run()


def row_insert_prepare(
    instance: Model,
    *,
    unless_conflict_on: tuple[str, ...] = (),
    following: Sequence[Following] = (),
    computed: Computed | None = None,
) -> "PreparedWrite":
    """row_insert's statements written and their values prepared, every row's, to be run later (run(), once):
    for a caller that prepares them before taking the database's write lock, so that holding it costs only the
    statements themselves. A following row's fields that take the written row's key or values (takes_key,
    Following.takes) are set when it runs."""
    return _insert_prepare(instance, unless_conflict_on, following, computed, None)


def row_insert_else_read(
    instance: Model,
    *,
    unless_conflict_on: tuple[str, ...],
    following: Sequence[Following],
    computed: Computed | None,
    read: str,
    read_params: Sequence[Any],
) -> tuple[Any, ...] | None:
    """PostgreSQL: row_insert in one statement with `read` (a SELECT of one row at most, with read_params),
    which reads as the statement began: the instance is inserted only when read reads no row then (and no
    concurrent writer's row conflicts with it). None when it was inserted; else read's row, its columns all
    None when read found none (a concurrent writer's row came first). A row read is never waited for, even
    while another transaction is changing or removing it."""
    if connection.vendor != "postgresql":
        raise ValueError("row_insert_else_read writes and reads in one statement: PostgreSQL's data-modifying WITH")
    write = _insert_prepare(instance, unless_conflict_on, following, computed, (read, tuple(read_params)))
    if write.run():
        return None
    return write.returned[1 + (computed is not None) + len(following) :]


def _insert_prepare(
    instance: Model,
    unless_conflict_on: tuple[str, ...],
    following: Sequence[Following],
    computed: Computed | None,
    read: tuple[str, tuple[Any, ...]] | None,
) -> "PreparedWrite":
    if not instance._state.adding:
        raise ValueError(f"{instance!r} is saved already: row_insert inserts new rows only")
    computed_sql = (computed.field, computed.sql) if computed is not None else None
    unless_read = read[0] if read is not None else None
    sql, fields = _insert_sql(type(instance), connection.vendor, unless_conflict_on, (), computed_sql, unless_read)
    values = _prepared_computed(instance, fields, computed)
    if read is not None:
        values += read[1]
    return PreparedWrite(
        instance,
        sql,
        values,
        following,
        computed=computed.field if computed is not None else None,
        read=read,
    )


def row_update(
    instance: Model,
    fields: Sequence[str],
    *,
    following: Sequence[Following] = (),
    unless_changed: Mapping[str, Any] | None = None,
) -> bool:
    """Save these fields of a saved instance, as instance.save(update_fields=fields) would, in one statement of
    SQL written once per set of fields (each field's pre_save and database preparation), and insert the
    following rows after it, as row_insert does (on PostgreSQL in the same statement). Sends no signal. False,
    writing nothing, when its row is gone, or with unless_changed ({field: value}), when its row no longer
    holds those values."""
    if instance._state.adding:
        raise ValueError(f"{instance!r} is not saved: row_update changes saved rows only")
    unchanged = unless_changed or {}
    sql, updated = _update_sql(type(instance), tuple(fields), tuple(unchanged))
    values = _prepared(instance, updated, add=False)
    values.append(instance._meta.pk.get_db_prep_value(instance.pk, connection))
    for name, value in unchanged.items():
        values.append(_concrete_field(type(instance), name).get_db_prep_value(value, connection))
    return PreparedWrite(instance, sql, values, following).run()


@dataclass(frozen=True)
class _FollowingStatement:
    """SQLite: a following row's INSERT, its values prepared, and where in them the values it takes from the
    written row go: (index, field, name of the written row's field, None for its key)."""

    row: Following
    sql: str
    values: list[Any]
    taken: tuple[tuple[int, Field, str | None], ...]


class PreparedWrite:
    """A statement that writes one row (or none) and returns its key (and the field named computed), with the
    rows following it (on PostgreSQL in the same statement, and the row `read` reads, after the keys), its
    values prepared: run() runs it, once, and says whether it wrote; `returned` is then the statement's row."""

    def __init__(
        self,
        instance: Model,
        sql: str,
        values: list[Any],
        following: Sequence[Following],
        *,
        computed: str | None = None,
        read: tuple[str, tuple[Any, ...]] | None = None,
    ) -> None:
        self.instance, self.following, self.computed = instance, following, computed
        for row in following:
            for name, written_name in row.takes:
                if written_name != computed:
                    raise ValueError(
                        f"{type(row.instance).__name__}.{name} takes {written_name}, which is not the written row's "
                        f"computed field ({computed}): a following row takes that field alone, besides the key"
                    )
        self.returned: tuple[Any, ...] = ()
        self.in_one_statement = (bool(following) or read is not None) and connection.vendor == "postgresql"
        self.followers: list[_FollowingStatement] = []
        if self.in_one_statement:
            specs = tuple((type(row.instance), row.takes_key, row.replaces, row.takes) for row in following)
            sql = _with_following_sql(sql, type(instance), specs, computed)
            for row in following:
                left_out = {name for name, _ in row.takes} | ({row.takes_key} if row.takes_key is not None else set())
                values += _prepared(row.instance, _inserted_fields(type(row.instance)), leave_out=left_out)
            if read is not None:
                alias = quote("read")
                sql += f", {alias}.* FROM (SELECT 1) AS {quote('one')} LEFT JOIN ({read[0]}) AS {alias} ON TRUE"
                values += read[1]
        else:
            for row in following:
                # SQLite: one statement each (no round trip to save), prepared now.
                follower_sql, fields = _insert_sql(type(row.instance), connection.vendor, (), row.replaces)
                taken_names: dict[str, str | None] = dict(row.takes)
                if row.takes_key is not None:
                    taken_names[row.takes_key] = None
                taken = tuple(
                    (index, field, taken_names[field.name])
                    for index, field in enumerate(fields)
                    if field.name in taken_names
                )
                self.followers.append(_FollowingStatement(row, follower_sql, _prepared(row.instance, fields), taken))
        self.sql, self.values = sql, values

    def run(self) -> bool:
        instance = self.instance
        with connection.cursor() as cursor:
            cursor.execute(self.sql, self.values)
            returned = cursor.fetchone()
        self.returned = returned or ()
        if returned is None or returned[0] is None:
            return False
        _saved(instance, returned[0])
        first_width = 1
        if self.computed is not None:
            setattr(instance, self.computed, returned[1])
            first_width = 2
        for row in self.following:
            if row.takes_key is not None:
                setattr(row.instance, row.takes_key, instance)
            for name, written_name in row.takes:
                setattr(row.instance, name, getattr(instance, written_name))
        if self.in_one_statement:
            for index, row in enumerate(self.following):
                _saved(row.instance, returned[first_width + index])
            return True
        for follower in self.followers:
            values = list(follower.values)
            for index, field, source in follower.taken:
                value = instance.pk if source is None else getattr(instance, source)
                values[index] = field.get_db_prep_save(value, connection)
            with connection.cursor() as cursor:
                cursor.execute(follower.sql, values)
                _saved(follower.row.instance, cursor.fetchone()[0])
        return True
