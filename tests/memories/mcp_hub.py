"""Real MCP servers for the tests: `manage.py mcp` over stdio, and the hub's ASGI application under
gunicorn with uvicorn workers on a free port, each on a database of its own (tests.support.hub_process).

Both are driven with the official `mcp` SDK's clients.
"""

import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.support.hub_process import PROJECT, HubDatabase

GUNICORN = Path(sys.executable).with_name("gunicorn")
SECRET_KEY = "mcp-tests-only-not-secret"


def hub_environment(database: HubDatabase, **extra: str) -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("HONCHO_", "MEMORYHUB_"))}
    environment.update(
        {
            "SECRET_KEY": SECRET_KEY,
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "MEMORYHUB_BACKEND": "local",
            "MEMORYHUB_RATE_LIMIT": "",
            "LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        }
    )
    environment.update(database.env)
    if database.sqlite_path is not None:
        environment["MEMORYHUB_CACHE_DIR"] = str(database.sqlite_path.parent / "cache")
    environment.update(extra)
    return environment


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


@dataclass
class HttpHub:
    port: int
    process: subprocess.Popen

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def running_asgi_hub(environment: dict[str, str], log_path: Path, *, workers: int = 2) -> Iterator[HttpHub]:
    """`make serve`'s server (gunicorn with uvicorn workers over memoryhub.asgi, memoryhub/gunicorn.conf.py),
    on a socket opened here, so the port is free and known at once."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            [
                str(GUNICORN),
                "-c",
                "memoryhub/gunicorn.conf.py",
                "--bind",
                f"fd://{listener.fileno()}",
                "--workers",
                str(workers),
                "--timeout",
                "60",
            ],
            cwd=PROJECT,
            env=environment,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            pass_fds=(listener.fileno(),),
            start_new_session=True,
        )
    listener.close()
    try:
        yield HttpHub(port=port, process=process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


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
