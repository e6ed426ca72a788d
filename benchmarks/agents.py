"""The work behind `manage.py benchmark_agents`: what the doors for agents cost.

- In process: selectors.context_block at the default budget, with no query, a common word and a
  rare one, for a user with --entries memories. Target: p50 <= 5 ms at 1,000 entries.
- Over HTTP, in one run against one server (`make serve`'s gunicorn with one uvicorn worker over
  memoryhub.asgi, on loopback): an MCP `recall` over Streamable HTTP through the official SDK's
  client, and the same search as REST (`GET /api/v1/users/{uid}/memories/?q=...&page_size=10`) on the same kind of
  keep-alive HTTP client, alternating in blocks so that load on the machine falls on both alike.
  The MCP session's initialize handshake is made once, before timing. Target: MCP p50 <= 1.5 x REST p50.
- stdio: seconds from starting `manage.py mcp --account NAME` to the answer of list_tools (after
  initialize), through the official SDK's stdio client. Three cases, each named in the report:
  the first start after an install (a fresh copy of the source, with no bytecode, whose data folder was
  prepared by `manage.py mcp --keep-answers` as `make install` runs it: that step is timed too); a
  start on a data folder nothing ever prepared (no kept answers: it waits for Django and the SDK to
  load, as every start would without memories.mcp.stdio); and the later starts, answered from what the
  first kept. Target: <= 2 s.
"""

import asyncio
import os
import random
import resource
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
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
from memories.embeddings import get_provider
from memories.embeddings.queries import QueryCachedProvider
from memories.embeddings.store import embeddings_process_pending

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


@dataclass
class ContextTiming:
    """One operation's wall time per call, and the CPU time of the process per call (the calling thread's and
    that of the thread embedding its query, memories.search.hybrid): the CPU time grows much less with the
    machine's load, so it tells better what a call costs an idle machine."""

    wall: workload.Timing
    cpu: workload.Timing


def time_calls_with_cpu(call: Callable[[int], object], count: int) -> ContextTiming:
    timing = ContextTiming(workload.Timing(), workload.Timing())
    for number in range(count):
        started, cpu_started = time.perf_counter(), time.process_time()
        call(number)
        timing.cpu.samples.append(time.process_time() - cpu_started)
        timing.wall.samples.append(time.perf_counter() - started)
    return timing


def time_context(*, owner: User, uid: str, samples: int) -> dict[str, ContextTiming]:
    """The block with no query, with a word many memories hold (COMMON_WORD) and with one none of the user's
    holds at 1,000 entries (RARE_WORD: the search then looks for what it may be a typo of); each as an agent
    asking with the same query again (its vector kept by the provider, memories.embeddings.queries) and with
    the query's vector forgotten before each call (a new query every turn)."""
    provider = get_provider()

    def block(query_text: str, *, forget_query: bool = False) -> Callable[[int], object]:
        def call(number: int) -> object:
            if forget_query and isinstance(provider, QueryCachedProvider):
                provider.queries_clear()
            return selectors.context_block(owner=owner, uid=uid, query_text=query_text)

        return call

    calls: dict[str, Callable[[int], object]] = {"context, no query": block("")}
    for word in (workload.COMMON_WORD, workload.RARE_WORD):
        calls[f"context, q={word} (the query's vector kept)"] = block(word)
        calls[f"context, q={word} (a new query: embedded each call)"] = block(word, forget_query=True)
    timings = {}
    for label, call in calls.items():
        call(0)  # warm the statement cache
        timings[label] = time_calls_with_cpu(call, samples)
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


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed_start(parameters: StdioServerParameters) -> tuple[float, float]:
    before = _children_cpu()
    seconds = asyncio.run(_stdio_list_tools(parameters))
    return seconds, _children_cpu() - before


# What a copy of the source leaves out: what an install or a run makes, never what a clone holds.
SOURCE_COPY_IGNORED = (".git", ".venv", "__pycache__", "*.pyc", "data", "node_modules", "test-results")


@dataclass(frozen=True)
class StdioStarts:
    """Seconds to the list_tools answer and CPU seconds of the server process, per case (memories.mcp.stdio).

    The CPU seconds do not grow with the machine's load as the wall time does: they tell what a start
    costs on an idle machine. A start answered from kept answers is stopped by the client before it
    has loaded everything, so its CPU seconds are those it used until then."""

    keep_answers: tuple[float, float]  # `manage.py mcp --keep-answers`, as make install runs it
    after_install: tuple[float, float]  # the first start after it, from a fresh copy of the source
    nothing_kept: tuple[float, float]  # a start on a data folder nothing prepared
    later: list[tuple[float, float]]  # the starts after that one, from what it kept


def time_stdio_start(workdir: Path) -> StdioStarts:
    """Time the three cases of StdioStarts, each on a data folder of its own over the benchmark's database."""
    database = f"sqlite:///{workdir / 'memoryhub.sqlite3'}"

    def parameters(source: Path, data: Path) -> StdioServerParameters:
        environment = {**child_environment(data), "DATABASE_URL": database}
        return StdioServerParameters(
            command=sys.executable,
            args=["manage.py", "mcp", "--account", BENCHMARK_ACCOUNT],
            env=environment,
            cwd=str(source),
        )

    # A new user's checkout: the source as a clone holds it (no bytecode), prepared as make install prepares it.
    source = workdir / "fresh-checkout"
    shutil.copytree(settings.BASE_DIR, source, ignore=shutil.ignore_patterns(*SOURCE_COPY_IGNORED))
    installed = parameters(source, workdir / "installed-data")
    before, started = _children_cpu(), time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", "mcp", "--keep-answers"], cwd=source, env=installed.env, check=True, timeout=600
    )
    keep_answers = (time.perf_counter() - started, _children_cpu() - before)
    after_install = _timed_start(installed)
    plain = parameters(Path(settings.BASE_DIR), workdir / "plain-data")
    nothing_kept = _timed_start(plain)
    later = [_timed_start(plain) for _ in range(STDIO_STARTS - 1)]
    return StdioStarts(keep_answers, after_install, nothing_kept, later)


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
    progress(f"embedding the entries of {uid} (the user timed), as the worker does")
    while embeddings_process_pending(owner=owner, uid=uid):
        pass
    progress("context block, in process")
    load_before = os.getloadavg()
    context_timings = time_context(owner=owner, uid=uid, samples=samples)
    block = selectors.context_block(owner=owner, uid=uid)
    connection.close()
    machine = workload.machine()
    provider = get_provider()
    heading = (
        f"## Context block, in process (budget {context.CONTEXT_DEFAULT_BUDGET}: "
        f"{len(block.entries)} memories, {block.length} characters)"
    )
    lines = [
        "# Agents' benchmark",
        "",
        f"{users} users x {entries} entries on SQLite; {samples} calls per operation; embeddings: "
        f"{provider.name if provider is not None else 'off'} (the timed user's entries embedded, so the ranked "
        "search's semantic side takes part).",
        "",
        *(f"- {name}: {value}" for name, value in machine.items()),
        "",
        heading,
        "",
        "| operation | p50 ms | p95 ms | CPU p50 ms |",
        "|---|---:|---:|---:|",
        *(
            f"| {label} | {workload.milliseconds(timing.wall.p50)} | {workload.milliseconds(timing.wall.p95)} | "
            f"{workload.milliseconds(timing.cpu.p50)} |"
            for label, timing in context_timings.items()
        ),
        "",
    ]
    worst = max(timing.wall.p50 for timing in context_timings.values())
    lines.append(
        f"Load average (1, 5, 15 min) before these timings: {' '.join(f'{load:.2f}' for load in load_before)}; "
        f"after: {' '.join(f'{load:.2f}' for load in os.getloadavg())}."
    )
    lines.append("")
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
        "| start | seconds to the answer | CPU seconds of the server process |",
        "|---|---:|---:|",
        f"| `manage.py mcp --keep-answers` (what make install runs after the packages; no start) | "
        f"{starts.keep_answers[0]:.2f} | {starts.keep_answers[1]:.2f} |",
        f"| first start after the install (a fresh copy of the source, no bytecode) | "
        f"{starts.after_install[0]:.2f} | {starts.after_install[1]:.2f} |",
        f"| a start on a data folder nothing prepared (no kept answers) | "
        f"{starts.nothing_kept[0]:.2f} | {starts.nothing_kept[1]:.2f} |",
        *(
            f"| a later start, from the answers that one kept | {seconds:.2f} | {cpu:.2f} |"
            for seconds, cpu in starts.later
        ),
        "",
        f"Load average (1, 5, 15 min) at the end: {' '.join(f'{load:.2f}' for load in os.getloadavg())}.",
        "",
        f"Target <= {STDIO_TARGET_SECONDS:g} s: first start after an install {starts.after_install[0]:.2f} s, "
        f"{_verdict(starts.after_install[0] <= STDIO_TARGET_SECONDS)}; later starts, slowest "
        f"{max(seconds for seconds, _ in starts.later):.2f} s, "
        f"{_verdict(max(seconds for seconds, _ in starts.later) <= STDIO_TARGET_SECONDS)}; a start nothing "
        f"prepared {starts.nothing_kept[0]:.2f} s, {_verdict(starts.nothing_kept[0] <= STDIO_TARGET_SECONDS)}.",
    ]
    return "\n".join(lines) + "\n"
