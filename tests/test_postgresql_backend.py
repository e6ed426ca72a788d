"""The hub's PostgreSQL backend (memoryhub/postgresql/base.py): with parameters bound by the server, Django's
multi-row statements are cut into batches that fit the protocol's 65,535 parameters."""

import pytest
from django.conf import settings
from django.db import connection

from memories import services
from memories.models import MemoryEntry, MemoryEvent
from memoryhub.postgresql.base import PROTOCOL_MAX_PARAMETERS

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="the hub's PostgreSQL backend")


def test_batches_fit_the_protocol_when_the_server_binds_parameters(db):
    fields = MemoryEvent._meta.concrete_fields
    rows = range(100_000)
    if settings.DB_SERVER_SIDE_BINDING:
        assert connection.features.max_query_params == PROTOCOL_MAX_PARAMETERS
        assert connection.ops.bulk_batch_size(fields, rows) * len(fields) <= PROTOCOL_MAX_PARAMETERS
    else:
        assert connection.ops.bulk_batch_size(fields, rows) == len(rows)


@pytest.mark.slow
def test_a_user_with_more_entries_than_a_statement_takes_parameters_is_forgotten(owner):
    # Forgetting writes a history event per entry (bulk_create) and deletes the entries with what refers to
    # them (Django's collector, by id): one statement of each carried more parameters than the protocol's
    # 65,535, which psycopg refused, when the server binds them.
    count = PROTOCOL_MAX_PARAMETERS + 1000
    records = [services.ImportRecord(uid="alice", key=f"k{number}", value="v") for number in range(count)]
    for start in range(0, count, 20_000):
        services.entries_import(owner=owner, records=records[start : start + 20_000])

    assert services.user_forget(owner=owner, uid="alice") == count
    assert not MemoryEntry.objects.filter(owner=owner, uid="alice").exists()
    assert MemoryEvent.objects.filter(owner=owner, uid="alice", action=MemoryEvent.Action.DELETE).count() == count
