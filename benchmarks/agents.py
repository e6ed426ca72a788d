"""The work behind `manage.py benchmark_agents`: what the doors for agents cost.

- In process: selectors.context_block at the default budget, with no query, a common word and a
  rare one, for a user with --entries memories. Target: p50 <= 5 ms at 1,000 entries.
- Over HTTP, in one run against one server (`make serve`'s gunicorn with one uvicorn worker over
  memoryhub.asgi, on loopback): an MCP `recall` over Streamable HTTP through the official SDK's
  client, and the same search as REST (`GET /api/v1/users/{uid}/memories/?q=...&page_size=10`) on the same kind of
  keep-alive HTTP client, alternating in blocks so that load on the machine falls on both alike.
  The MCP session's initialize handshake is made once, before timing. Target: MCP p50 <= 1.5 x REST p50.
- stdio: seconds from starting `manage.py mcp --account NAME` to the answer of list_tools (after
  initialize), a few times. The first start finds no kept answers (memories.mcp.stdio) and waits for
  the SDK; the later ones are answered from what the first kept. Target: <= 2 s.
"""

import asyncio
import os
import random
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx2
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from benchmarks import workload
from memories import context, selectors, services
from memories.accounts import account_create

CONTEXT_TARGET_SECONDS = 0.005
MCP_OVER_REST_TARGET = 1.5
STDIO_TARGET_SECONDS = 2.0
STDIO_STARTS = 4
BENCHMARK_ACCOUNT = "agents-benchmark"
RECALL_LIMIT = 10
BLOCK = 20
SERVER_START_SECONDS = 120


def seed(*, owner: User, users: int, entries: int) -> None:
    """entries memories for each of users uids, in batches, written through the services."""
    rng = random.Random(7)
    for user in range(users):
        operations = [
            services.BatchOperation(
                op="put", key=workload.entry_key(number), value=workload.entry_value(rng, number), kind="fact"
            )
            for number in range(entries)
        ]
        for start in range(0, entries, services.BATCH_MAX_OPERATIONS):
            services.entries_batch(
                owner=owner,
                uid=workload.user_uid(user),
                operations=operations[start : start + services.BATCH_MAX_OPERATIONS],
            )


def time_context(*, owner: User, uid: str, samples: int) -> dict[str, workload.Timing]:
    calls: dict[str, Callable[[int], object]] = {
        "context, no query": lambda number: selectors.context_block(owner=owner, uid=uid),
        f"context, q={workload.COMMON_WORD}": lambda number: selectors.context_block(
            owner=owner, uid=uid, query_text=workload.COMMON_WORD
        ),
        f"context, q={workload.RARE_WORD}": lambda number: selectors.context_block(
            owner=owner, uid=uid, query_text=workload.RARE_WORD
        ),
    }
    timings = {}
    for label, call in calls.items():
        call(0)  # warm the statement cache
        timings[label] = workload.time_calls(call, samples)
    return timings


def child_environment(workdir: Path) -> dict[str, str]:
    environment = {name: value for name, value in os.environ.items() if not name.startswith(("MEMORYHUB_", "HONCHO_"))}
    environment.update(
        DATABASE_URL="",
        MEMORYHUB_DATA_DIR=str(workdir),
        MEMORYHUB_CACHE_DIR=str(workdir / "cache"),
        # The per-token rate limit would cap the benchmark's requests: it measures speed, not the limit.
        MEMORYHUB_RATE_LIMIT="",
        SECRET_KEY=environment.get("SECRET_KEY") or "agents-benchmark-only-not-secret",
        DEBUG="0",
        LOG_LEVEL="WARNING",
        ALLOWED_HOSTS="127.0.0.1",
        DJANGO_SETTINGS_MODULE="memoryhub.settings",
    )
    return environment


async def _time_recall(url: str, token: str, uid: str, samples: int) -> tuple[workload.Timing, workload.Timing]:
    rest, mcp = workload.Timing(), workload.Timing()
    words = [workload.COMMON_WORD, workload.RARE_WORD]
    headers = {"Authorization": f"Token {token}"}
    async with (
        httpx2.AsyncClient(base_url=url, headers=headers, timeout=60) as rest_client,
        httpx2.AsyncClient(headers=headers, timeout=60) as mcp_client,
        streamable_http_client(f"{url}/mcp", http_client=mcp_client) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()

        async def rest_call(word: str) -> None:
            response = await rest_client.get(
                f"/api/v1/users/{uid}/memories/", params={"q": word, "page_size": RECALL_LIMIT}
            )
            response.raise_for_status()

        async def mcp_call(word: str) -> None:
            result = await session.call_tool("recall", {"uid": uid, "query": word, "limit": RECALL_LIMIT})
            if result.is_error:
                raise RuntimeError(result.content)

        for call in (rest_call, mcp_call):  # warm both paths
            await call(words[0])
        started = time.perf_counter()
        for number in range(samples):
            word = words[(number // BLOCK) % len(words)]
            for call, timing in (
                ((rest_call, rest), (mcp_call, mcp)) if number % 2 == 0 else ((mcp_call, mcp), (rest_call, rest))
            ):
                before = time.perf_counter()
                await call(word)
                timing.samples.append(time.perf_counter() - before)
        rest.wall = mcp.wall = time.perf_counter() - started
    return rest, mcp


def time_recall_over_http(workdir: Path, token: str, uid: str, samples: int) -> tuple[workload.Timing, workload.Timing]:
    """(REST ?q=, MCP recall) round trips against one gunicorn + uvicorn worker serving memoryhub.asgi."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    gunicorn = Path(sys.executable).with_name("gunicorn")
    command = [
        str(gunicorn), "-c", "memoryhub/gunicorn.conf.py", "--workers", "1", "--bind", f"fd://{listener.fileno()}",
        "--timeout", "60", "--log-level", "warning", "--access-logfile", "/dev/null", "--chdir", str(settings.BASE_DIR),
    ]  # fmt: skip
    server = subprocess.Popen(
        command,
        env=child_environment(workdir),
        pass_fds=(listener.fileno(),),
        start_new_session=True,
        cwd=settings.BASE_DIR,
    )
    listener.close()
    try:
        workload.wait_for_port(port, seconds=SERVER_START_SECONDS, alive=lambda: server.poll() is None)
        return asyncio.run(_time_recall(f"http://127.0.0.1:{port}", token, uid, samples))
    finally:
        server.terminate()
        server.wait(timeout=30)


async def _stdio_list_tools(parameters: StdioServerParameters) -> float:
    started = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        async with stdio_client(parameters, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            seconds = time.perf_counter() - started
    if not tools.tools:
        raise RuntimeError("the stdio server listed no tools")
    return seconds


def time_stdio_start(workdir: Path) -> list[tuple[float, float]]:
    """(wall seconds to the list_tools answer, CPU seconds the server process used in all) per start,
    the first on a data folder that holds no kept answers yet.

    The CPU seconds do not grow with the machine's load as the wall time does: they tell what the
    start costs on an idle machine. A start answered from the kept answers is stopped by the client
    before it has loaded everything, so its CPU seconds are those it used until then."""
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp", "--account", BENCHMARK_ACCOUNT],
        env=child_environment(workdir),
        cwd=str(settings.BASE_DIR),
    )
    starts = []
    for _ in range(STDIO_STARTS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds = asyncio.run(_stdio_list_tools(parameters))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        starts.append((seconds, cpu))
    return starts


def _table(rows: list[tuple[str, workload.Timing]]) -> list[str]:
    lines = ["| operation | p50 ms | p95 ms |", "|---|---:|---:|"]
    for label, timing in rows:
        lines.append(f"| {label} | {workload.milliseconds(timing.p50)} | {workload.milliseconds(timing.p95)} |")
    return lines


def _verdict(holds: bool) -> str:
    return "holds" if holds else "does NOT hold"


def run(*, workdir: Path, entries: int, users: int, samples: int, http: bool, progress: Callable[[str], None]) -> str:
    """Seed the database the connection now points at, time everything, and return the report (Markdown)."""
    call_command("migrate", verbosity=0, interactive=False)
    owner, token = account_create(username=BENCHMARK_ACCOUNT)
    progress(f"seeding {users} users x {entries} entries")
    seed(owner=owner, users=users, entries=entries)
    uid = workload.user_uid(0)
    progress("context block, in process")
    context_timings = time_context(owner=owner, uid=uid, samples=samples)
    block = selectors.context_block(owner=owner, uid=uid)
    connection.close()
    machine = workload.machine()
    heading = (
        f"## Context block, in process (budget {context.CONTEXT_DEFAULT_BUDGET}: "
        f"{len(block.entries)} memories, {block.length} characters)"
    )
    lines = [
        "# Agents' benchmark",
        "",
        f"{users} users x {entries} entries on SQLite; {samples} calls per operation.",
        "",
        *(f"- {name}: {value}" for name, value in machine.items()),
        "",
        heading,
        "",
        *_table(list(context_timings.items())),
        "",
    ]
    worst = max(timing.p50 for timing in context_timings.values())
    lines.append(
        f"Target context p50 <= {CONTEXT_TARGET_SECONDS * 1000:g} ms: worst p50 "
        f"{workload.milliseconds(worst)} ms, {_verdict(worst <= CONTEXT_TARGET_SECONDS)}."
    )
    if not http:
        return "\n".join(lines) + "\n"
    progress("recall over HTTP: REST ?q= and MCP recall, alternating, one uvicorn worker")
    rest, mcp = time_recall_over_http(workdir, token, uid, samples)
    ratio = mcp.p50 / rest.p50
    progress("stdio: start to list_tools")
    starts = time_stdio_start(workdir)
    lines += [
        "",
        f"## Recall over HTTP (gunicorn, 1 uvicorn worker, loopback, keep-alive; {RECALL_LIMIT} results, "
        f"'{workload.COMMON_WORD}' and '{workload.RARE_WORD}' in turn)",
        "",
        *_table([("REST GET .../memories/?q=", rest), ("MCP tools/call recall (Streamable HTTP)", mcp)]),
        "",
        f"Target MCP recall p50 <= {MCP_OVER_REST_TARGET:g} x REST p50: {ratio:.2f} x, "
        f"{_verdict(ratio <= MCP_OVER_REST_TARGET)}.",
        "",
        "## stdio: from starting `manage.py mcp` to the list_tools answer",
        "",
        "Seconds to the answer, each start (the first with nothing kept yet): "
        + ", ".join(f"{seconds:.2f}" for seconds, _ in starts)
        + "; CPU seconds of the server process (start, answer and exit): "
        + ", ".join(f"{cpu:.2f}" for _, cpu in starts)
        + ".",
        "",
        f"Target <= {STDIO_TARGET_SECONDS:g} s: first start {starts[0][0]:.2f} s, "
        f"{_verdict(starts[0][0] <= STDIO_TARGET_SECONDS)}; later starts, slowest "
        f"{max(seconds for seconds, _ in starts[1:]):.2f} s, "
        f"{_verdict(max(seconds for seconds, _ in starts[1:]) <= STDIO_TARGET_SECONDS)}.",
    ]
    return "\n".join(lines) + "\n"
