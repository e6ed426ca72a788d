"""Real MCP servers for the tests, driven with the official `mcp` SDK's clients: `manage.py mcp` over
stdio, and Streamable HTTP at /mcp of a hub served as `make serve` serves it
(tests.support.hub_process.running_hub), each on a database of its own.
"""

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from starlette.types import Message

from tests.support.hub_process import PROJECT


def stdio_parameters(environment: dict[str, str], account: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp", "--account", account], env=environment, cwd=str(PROJECT)
    )


@asynccontextmanager
async def stdio_session(environment: dict[str, str], account: str) -> AsyncIterator[ClientSession]:
    """An initialized MCP session with a real `manage.py mcp --account account` process."""
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(stdio_parameters(environment, account), errlog=quiet) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    """An initialized MCP session over Streamable HTTP with these headers (the bearer token, an Origin)."""
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


def mcp_asgi_post(headers: list[tuple[bytes, bytes]]) -> list[Message]:
    """The ASGI messages the hub's /mcp application sends for a POST with these headers and an empty body, in this
    process (for what it answers before the SDK reads the request)."""
    from memories.mcp.http import MCPApplication  # here: the MCP server costs any importer its start-up

    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    asyncio.run(MCPApplication()({"type": "http", "method": "POST", "path": "/mcp", "headers": headers}, receive, send))
    return sent
