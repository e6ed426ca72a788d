"""Entries read by fixed SQL: the columns and their converters worked out once per process, not per query.

The ORM compiles every QuerySet into SQL again on each request, and on a PUT or a page of entries that
compiling was the largest cost (more than the database's own work). The few hot reads that always
have the same shape (the PUT's locked read; a page of a user's entries) write their SQL once with
these helpers and turn each row into a MemoryEntry exactly as the ORM would: the same fields, the
same database converters, the same state (saved, in this database).
"""

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db import connection
from django.db.models import Field
from django.db.models.base import ModelState
from django.db.models.expressions import Col

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


def entry_from_row(row: Sequence[Any]) -> MemoryEntry:
    """The entry of one row (entries_from_rows)."""
    return entries_from_rows([row])[0]
