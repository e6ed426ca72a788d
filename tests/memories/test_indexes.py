"""The write path's tables keep no index another one makes redundant: every index is one more page a write
changes (migration 0021 dropped five)."""

from typing import Any

import pytest
from django.db import connection

from memories.models import EntryEmbedding, MemoryEntry, MemoryEvent

pytestmark = pytest.mark.django_db

WRITE_PATH_MODELS = [MemoryEntry, MemoryEvent, EntryEmbedding]


def _btree(constraint: Any) -> bool:
    # SQLite's introspection names every index "idx"; PostgreSQL's names its access method.
    return constraint.get("type") in ("btree", "idx")


@pytest.mark.parametrize("model", WRITE_PATH_MODELS, ids=lambda model: model.__name__)
def test_no_index_is_the_leading_columns_of_another(model) -> None:
    partial = {index.name for index in model._meta.indexes if index.condition is not None}
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, model._meta.db_table)
    indexes = {
        name: constraint["columns"]
        for name, constraint in constraints.items()
        if ((constraint["index"] or constraint["unique"] or constraint["primary_key"]) and _btree(constraint))
        or constraint["primary_key"]
    }
    redundant = [
        (name, other)
        for name, columns in indexes.items()
        if name not in partial and not constraints[name]["unique"] and not constraints[name]["primary_key"]
        for other, other_columns in indexes.items()
        if other != name and other not in partial and other_columns[: len(columns)] == columns
    ]
    assert redundant == []
