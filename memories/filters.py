"""Which of a user's entries a read sees: expiry, kind and meta filters, as one condition.

Every read of entries (memories.selectors, memories.search) narrows (owner, uid) with an
EntryFilter, so each way in (REST, the tool, MCP, the dashboard, the context block, export) honours
the same rules:

- an entry whose expiry has passed is left out, unless the filter asks for expired entries too (the
  owner's `?include_expired=1`);
- `kinds`: only entries of one of these kinds (`?kind=` / `?kind__in=a,b`);
- `meta`: for each field, only entries whose top-level meta field equals one of the values
  (`?meta.FIELD=value`, `?meta.FIELD__in=a,b`). A value given as text also matches the number or
  boolean it spells ("3" matches 3, "true" matches true), since a query string carries only text.
  JSON's types stay apart on both databases: true is not 1, false is not 0, "3" in meta is not 3;
  a number matches the same number written as an integer or not (3 and 3.0).

The condition is a Q for the ORM, and the same condition compiled to SQL over the entry table for
the search's own statements (EntryFilter.sql). On PostgreSQL a meta filter is JSON containment
(`meta @> '{"FIELD": value}'`), which the GIN index of migration 0014 answers; on SQLite it is
json_extract over the user's rows, which the (owner, uid) index narrows to first.
"""

import functools
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from django.db import connection
from django.db.models import F, Func, Q, TextField, Value
from django.db.models.lookups import Exact, In
from django.utils import timezone

from memories.models import MemoryEntry
from memories.validation import JSON_NUMBER_RANGE, UNSTORABLE_CHARACTERS, InvalidField, check_flag, check_kind

# A meta field a filter names: letters, digits, '_' and '-', starting with a letter or '_'; top level only.
META_FIELD_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
META_FIELD_MAX_LENGTH = 64
# A filter value, as text, and how many a filter may hold (kinds, fields, values of one field).
FILTER_VALUE_MAX_LENGTH = 200
FILTER_MAX_VALUES = 50
FILTER_MAX_FIELDS = 10
META_PREFIX = "meta."
IN_SUFFIX = "__in"
INCLUDE_EXPIRED_PARAMETER = "include_expired"

MetaScalar = str | int | float | bool
# What SQLite's json_type calls a JSON number.
JSON_NUMBER_TYPES = ("integer", "real")


@dataclass(frozen=True)
class EntryFilter:
    """The entries of one user a read sees (the default: every entry not expired)."""

    kinds: tuple[str, ...] = ()
    meta: tuple[tuple[str, tuple[MetaScalar, ...]], ...] = ()
    include_expired: bool = False
    now: datetime = field(default_factory=timezone.now)

    @property
    def narrows(self) -> bool:
        """Whether it asks for more than the unexpired entries (a kind or a meta field)."""
        return bool(self.kinds or self.meta)

    def condition(self) -> Q:
        """The filter as a condition on MemoryEntry rows."""
        condition = Q() if self.include_expired else Q(expires__isnull=True) | Q(expires__gt=self.now)
        if len(self.kinds) == 1:
            condition &= Q(kind=self.kinds[0])
        elif self.kinds:
            condition &= Q(kind__in=self.kinds)
        for name, values in self.meta:
            condition &= _meta_condition(name, values)
        return condition

    @property
    def moment_parameter(self) -> str | datetime:
        """The filter's moment as the expiry column's parameter on this database (an entry expired at it or
        before is left out)."""
        return _moment_parameter(self.now)

    def sql(self) -> tuple[str, list[Any]]:
        """The condition as SQL over the entry table (unaliased), with its parameters: " AND (...)" or ""."""
        sql, params = self._compiled
        return sql, list(params)

    @cached_property
    def _compiled(self) -> tuple[str, tuple[Any, ...]]:
        # Compiling the condition through the ORM costs more than the search's statement it goes into, and
        # only its moment changes from one read to the next: it is compiled once per shape, then the
        # read's moment is put in its place.
        sql, params, moment_at = _compiled_shape(
            connection.vendor, _shape_key(self.kinds, self.meta), self.include_expired
        )
        if not moment_at:
            return sql, params
        moment = _moment_parameter(self.now)
        return sql, tuple(moment if index in moment_at else param for index, param in enumerate(params))


# Two moments to compile a filter's shape at: the parameters that differ between them are the moment's.
_SHAPE_MOMENTS = (datetime(2000, 1, 1, tzinfo=UTC), datetime(2001, 2, 3, 4, 5, 6, 7, tzinfo=UTC))
# How many filter shapes (kinds, meta fields and values) a process keeps compiled.
SHAPE_CACHE_SIZE = 256


# A filter's kinds and meta fields, each value with its type's name.
ShapeKey = tuple[tuple[str, ...], tuple[tuple[str, tuple[tuple[str, MetaScalar], ...]], ...]]


def _shape_key(kinds: tuple[str, ...], meta: tuple[tuple[str, tuple[MetaScalar, ...]], ...]) -> ShapeKey:
    """kinds and meta as a cache key that tells 1, 1.0 and True apart (equal in Python, not in JSON)."""
    return kinds, tuple((name, tuple((type(value).__name__, value) for value in values)) for name, values in meta)


def _moment_parameter(moment: datetime) -> str | datetime:
    """A moment as the expiry column's parameter on this database."""
    return MemoryEntry._meta.get_field("expires").get_db_prep_value(moment, connection)


def _same(parameter: object, moment: object) -> bool:
    return type(parameter) is type(moment) and parameter == moment


def _compile(condition: Q) -> tuple[str, tuple[Any, ...]]:
    """The ORM's own SQL for the condition, so the search's statements and the querysets agree."""
    if not condition:
        return "", ()
    query = MemoryEntry.objects.filter(condition).query
    where, params = query.get_compiler(connection=connection).compile(query.where)
    return f" AND ({where})", tuple(params)


@functools.lru_cache(maxsize=SHAPE_CACHE_SIZE)
def _compiled_shape(vendor: str, key: ShapeKey, include_expired: bool) -> tuple[str, tuple[Any, ...], frozenset[int]]:
    """The SQL of a filter of this shape on this database, its parameters at one moment, and which of them are
    the moment."""
    kinds, typed_meta = key
    meta = tuple((name, tuple(value for _, value in values)) for name, values in typed_meta)
    first, second = (
        _compile(EntryFilter(kinds=kinds, meta=meta, include_expired=include_expired, now=moment).condition())
        for moment in _SHAPE_MOMENTS
    )
    (sql, params), (same_sql, other_params) = first, second
    assert sql == same_sql and len(params) == len(other_params)  # only the moment's values change
    # (A parameter is compared with the moment as the database takes it: some, such as JSON, equal nothing else.)
    first_moment, second_moment = (_moment_parameter(moment) for moment in _SHAPE_MOMENTS)
    moment_at = frozenset(
        index
        for index, (one, other) in enumerate(zip(params, other_params, strict=True))
        if _same(one, first_moment) and _same(other, second_moment)
    )
    return sql, params, moment_at


def _json_extract(document: F | Value, path: str) -> Func:
    return Func(document, Value(path), function="JSON_EXTRACT", output_field=TextField())


def _json_type(document: F | Value, path: str) -> Func:
    return Func(document, Value(path), function="JSON_TYPE", output_field=TextField())


def _meta_condition(name: str, values: tuple[MetaScalar, ...]) -> Q:
    """Entries whose top-level meta field `name` equals one of the values (or the number or boolean it spells)."""
    condition = Q()
    for value in values:
        for candidate in _typed(value):
            if connection.vendor == "postgresql":
                # JSON containment, which the GIN index over meta answers.
                condition |= Q(meta__contains={name: candidate})
            else:
                condition |= _sqlite_meta_equals(name, candidate)
    return condition


def _sqlite_meta_equals(name: str, candidate: MetaScalar) -> Q:
    """SQLite's test that the meta field `name` is `candidate`, with JSON's types kept apart as PostgreSQL's
    containment keeps them: json_extract gives true as 1 and false as 0, so a boolean is told by json_type,
    and a number matches only a JSON number (1 and 1.0 alike). (name is checked: letters, digits, '_', '-'.)"""
    path = f'$."{name}"'
    if isinstance(candidate, bool):
        return Q(Exact(_json_type(F("meta"), path), Value("true" if candidate else "false")))
    # json_extract(meta, path) = json_extract('<the value as JSON>', '$'): both sides SQL values, so text
    # equals text and numbers numbers.
    equals = Q(Exact(_json_extract(F("meta"), path), _json_extract(Value(json.dumps(candidate)), "$")))
    if isinstance(candidate, str):
        return equals
    return equals & Q(In(_json_type(F("meta"), path), JSON_NUMBER_TYPES))


def _typed(value: MetaScalar) -> tuple[MetaScalar, ...]:
    """The value, and when it is text that spells a JSON number or boolean, that value too."""
    if not isinstance(value, str):
        return (value,)
    try:
        parsed = json.loads(value)
    except ValueError:
        return (value,)
    if isinstance(parsed, bool | int) or (isinstance(parsed, float) and math.isfinite(parsed)):
        return (value, parsed)
    return (value,)


def check_meta_field(name: object, *, parameter: str) -> str:
    """A meta field name a filter may use; InvalidField names the parameter it came in."""
    if not isinstance(name, str) or not name:
        raise InvalidField(parameter, "must name a meta field.")
    if len(name) > META_FIELD_MAX_LENGTH:
        raise InvalidField(parameter, f"must name a meta field of at most {META_FIELD_MAX_LENGTH} characters.")
    if not META_FIELD_PATTERN.fullmatch(name) or "__" in name:
        raise InvalidField(
            parameter,
            "must name a top-level meta field: a letter or '_' first, then letters, digits, '_' or '-' (no '__').",
        )
    return name


def _check_values(parameter: str, values: Iterable[object]) -> tuple[MetaScalar, ...]:
    checked: list[MetaScalar] = []
    for value in values:
        if isinstance(value, str):
            if not value or len(value) > FILTER_VALUE_MAX_LENGTH:
                raise InvalidField(parameter, f"each value must be 1 to {FILTER_VALUE_MAX_LENGTH} characters.")
            if UNSTORABLE_CHARACTERS.search(value):
                # No stored meta holds one (memories.validation.check_meta), and PostgreSQL refuses it in JSON.
                raise InvalidField(parameter, "must not contain NUL characters or unpaired surrogates.")
        elif not isinstance(value, bool | int | float):
            raise InvalidField(parameter, "each value must be a string, a number or a boolean.")
        elif isinstance(value, float) and not math.isfinite(value):
            raise InvalidField(parameter, f"each number must be {JSON_NUMBER_RANGE}; one is out of range.")
        checked.append(value)
    if not checked:
        raise InvalidField(parameter, "must hold at least one value.")
    if len(checked) > FILTER_MAX_VALUES:
        raise InvalidField(parameter, f"must hold at most {FILTER_MAX_VALUES} values; got {len(checked)}.")
    return tuple(dict.fromkeys(checked))


def _check_kinds(parameter: str, kinds: Iterable[object]) -> tuple[str, ...]:
    checked = []
    for kind in kinds:
        try:
            checked.append(check_kind(kind))
        except InvalidField as error:
            raise InvalidField(parameter, error.message) from None
    if not checked:
        raise InvalidField(parameter, "must hold at least one kind.")
    if len(checked) > FILTER_MAX_VALUES:
        raise InvalidField(parameter, f"must hold at most {FILTER_MAX_VALUES} kinds; got {len(checked)}.")
    return tuple(dict.fromkeys(checked))


def _split(text: str) -> list[str]:
    return text.split(",")


def filter_from_params(params: Mapping[str, str], *, now: datetime | None = None) -> EntryFilter:
    """The filter a request's query string asks for: kind, kind__in, meta.FIELD, meta.FIELD__in, include_expired.

    Other parameters are not the filter's and are left alone. Raises InvalidField naming the bad parameter.
    """
    kinds: tuple[str, ...] = ()
    if "kind" in params and "kind__in" in params:
        raise InvalidField("kind__in", "give kind or kind__in, not both.")
    if "kind" in params:
        # An empty kind is refused as an empty kind__in is: no entry has it, and leaving it out means any kind.
        kinds = _check_kinds("kind", [params["kind"]])
    elif "kind__in" in params:
        kinds = _check_kinds("kind__in", _split(params["kind__in"]))
    meta: dict[str, tuple[MetaScalar, ...]] = {}
    for parameter in params:
        if not parameter.startswith(META_PREFIX):
            continue
        name = parameter[len(META_PREFIX) :]
        values: list[str] = [params[parameter]]
        if name.endswith(IN_SUFFIX):
            name, values = name[: -len(IN_SUFFIX)], _split(params[parameter])
        check_meta_field(name, parameter=parameter)
        if name in meta:
            raise InvalidField(parameter, f"meta field {name!r} is filtered twice; give it once.")
        meta[name] = _check_values(parameter, values)
    if len(meta) > FILTER_MAX_FIELDS:
        raise InvalidField("meta", f"at most {FILTER_MAX_FIELDS} meta fields may be filtered; got {len(meta)}.")
    include_expired = check_flag(INCLUDE_EXPIRED_PARAMETER, params.get(INCLUDE_EXPIRED_PARAMETER, ""))
    return EntryFilter(
        kinds=kinds, meta=tuple(meta.items()), include_expired=include_expired, now=now or timezone.now()
    )


def filter_from_arguments(*, kind: object = None, meta: object = None) -> EntryFilter:
    """The filter a tool call asks for: kind (one kind, or a list of kinds), meta ({field: value or [values]}).

    Raises InvalidField naming the bad argument (`meta.FIELD` for one field's values).
    """
    kinds: tuple[str, ...] = ()
    if isinstance(kind, list):
        kinds = _check_kinds("kind", kind)
    elif kind is not None:
        kinds = _check_kinds("kind", [kind])
    fields: list[tuple[str, tuple[MetaScalar, ...]]] = []
    if meta is not None:
        if not isinstance(meta, dict):
            raise InvalidField("meta", "must be a JSON object of meta fields and the values to match.")
        if len(meta) > FILTER_MAX_FIELDS:
            raise InvalidField("meta", f"at most {FILTER_MAX_FIELDS} meta fields may be filtered; got {len(meta)}.")
        for name, wanted in meta.items():
            check_meta_field(name, parameter="meta")
            values = wanted if isinstance(wanted, list) else [wanted]
            fields.append((name, _check_values(f"meta.{name}", values)))
    return EntryFilter(kinds=kinds, meta=tuple(fields))


def filter_with_kind(filters: "EntryFilter | None", kind: str | None) -> EntryFilter:
    """filters (the default filter when None), narrowed to one kind when kind is given (the older `kind` argument)."""
    filters = filters if filters is not None else EntryFilter()
    if not kind:
        return filters
    if not filters.kinds or kind in filters.kinds:
        return replace(filters, kinds=(kind,))
    # Both name kinds and they share none: no entry has the empty kind (memory_entry_identity_not_empty).
    return replace(filters, kinds=("",))
