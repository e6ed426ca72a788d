"""/mcp when the database cannot answer its admission (the token's read): a JSON-RPC 503, as the REST API's."""

import json

from django.db import OperationalError, connection

from memories.mcp import http as mcp_http
from tests.memories.mcp_hub import mcp_asgi_post


def test_a_database_busy_at_admission_is_a_json_rpc_503_with_retry_after(db, settings, monkeypatch):
    settings.ALLOWED_HOSTS = ["testserver"]
    if connection.vendor == "sqlite":
        busy: Exception = OperationalError("database is locked")
    else:
        import psycopg.errors

        busy = OperationalError("deadlock detected")
        busy.__cause__ = psycopg.errors.DeadlockDetected("deadlock detected")

    def failing(token_key: str, client_address: str) -> None:
        raise busy

    monkeypatch.setattr(mcp_http, "admit", failing)

    start, body = mcp_asgi_post(
        [(b"host", b"testserver"), (b"authorization", b"Bearer some-token"), (b"content-length", b"0")]
    )

    assert start["status"] == 503 and (b"retry-after", b"1") in start["headers"]
    error = json.loads(body["body"])["error"]
    assert error["data"] == {"status": 503, "retry_after": 1, "code": "database_busy"}
    assert "nothing was written. Try again." in error["message"]
