"""/mcp when the database cannot answer its admission (the token's read): a JSON-RPC 503, as the REST API's."""

import asyncio
import json

from django.db import OperationalError, connection
from starlette.types import Message

from memories.mcp import http as mcp_http
from memories.mcp.http import MCPApplication


def _admitted_with(monkeypatch, error: Exception) -> list[Message]:
    def failing(token_key: str, client_address: str) -> None:
        raise error

    monkeypatch.setattr(mcp_http, "admit", failing)
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(b"host", b"testserver"), (b"authorization", b"Bearer some-token"), (b"content-length", b"0")],
    }
    asyncio.run(MCPApplication()(scope, receive, send))
    return sent


def test_a_database_busy_at_admission_is_a_json_rpc_503_with_retry_after(db, settings, monkeypatch):
    settings.ALLOWED_HOSTS = ["testserver"]
    if connection.vendor == "sqlite":
        busy: Exception = OperationalError("database is locked")
    else:
        import psycopg.errors

        busy = OperationalError("deadlock detected")
        busy.__cause__ = psycopg.errors.DeadlockDetected("deadlock detected")

    start, body = _admitted_with(monkeypatch, busy)

    assert start["status"] == 503 and (b"retry-after", b"1") in start["headers"]
    error = json.loads(body["body"])["error"]
    assert error["data"] == {"status": 503, "retry_after": 1, "code": "database_busy"}
    assert "nothing was written. Try again." in error["message"]
