"""The work behind `manage.py benchmark`: the hub's speed targets, measured and reported.

A fresh SQLite database in a temporary folder is seeded through import_memories (timed, in a
process of its own), then put, get, query and a list page are timed in process, over HTTP and on
raw sqlite3 (the floor). Every latency is taken by benchmarks.timing's clock and summarised by its
one percentile.
"""

import contextlib
import ctypes
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from benchmarks import workload
from memories import selectors, services
from memories.accounts import account_create

ANALYSIS_MARKER = (
    "<!-- Everything below this line is written by hand and kept when the benchmark rewrites the file. -->"
)
PR_SET_PDEATHSIG = 1
SERVER_START_SECONDS = 60
SERVER_STOP_SECONDS = 10

# The targets at 100,000 entries for one user (1,000,000 in all), on SQLite.
IMPORT_TARGET_ENTRIES, IMPORT_TARGET_SECONDS, IMPORT_TARGET_MEGABYTES = 1_000_000, 90.0, 300.0


@dataclass
class Results:
    entries: int
    users: int
    per_user: int
    small_entries: int
    http_workers: int
    http_clients: int
    machine: dict[str, str]
    started: str
    import_seconds: float = 0.0
    import_megabytes: float = 0.0
    in_process: dict[str, workload.Timing] = field(default_factory=dict)
    small_query: workload.Timing | None = None
    http: dict[str, workload.Timing] = field(default_factory=dict)
    floor: dict[str, workload.Timing] = field(default_factory=dict)
    queries: dict[str, list[str]] = field(default_factory=dict)

    def targets(self) -> list[tuple[str, str, bool]]:
        """(target, measured, holds) for each of the hub's speed targets."""
        ms = workload.milliseconds
        rows = []
        for operation, limit in (
            ("query common", 2.0),
            ("query rare", 2.0),
            ("list page", 2.0),
            ("get", 0.3),
            ("put", 1.0),
        ):
            p50 = self.in_process[operation].p50
            rows.append((f"in process: {operation} p50 <= {limit} ms", f"{ms(p50)} ms", p50 * 1000 <= limit))
        http_get = self.http["get"]
        rows.append(("over HTTP: get p50 <= 2 ms", f"{ms(http_get.p50)} ms", http_get.p50 * 1000 <= 2.0))
        rows.append(
            (
                f"over HTTP: >= 1,000 gets/s with {self.http_workers} workers",
                f"{http_get.per_second:,.0f} gets/s",
                http_get.per_second >= 1000,
            )
        )
        assert self.small_query is not None  # measured before the targets are read
        large, small = self.in_process["query common"].p50, self.small_query.p50
        rows.append(
            (
                f"query p50 at {self.per_user:,} entries <= 2 x at {self.small_entries:,}",
                f"{ms(large)} / {ms(small)} ms = {large / small:.1f} x",
                large <= 2 * small,
            )
        )
        rate = self.entries / self.import_seconds if self.import_seconds else 0.0
        needed = IMPORT_TARGET_ENTRIES / IMPORT_TARGET_SECONDS
        rows.append(
            (
                f"import {IMPORT_TARGET_ENTRIES:,} entries in <= {IMPORT_TARGET_SECONDS:.0f} s "
                f"(>= {needed:,.0f} entries/s)",
                f"{self.entries:,} in {self.import_seconds:.1f} s = {rate:,.0f} entries/s",
                rate >= needed,
            )
        )
        rows.append(
            (
                f"import peak memory <= {IMPORT_TARGET_MEGABYTES:.0f} MB",
                f"{self.import_megabytes:.0f} MB",
                self.import_megabytes <= IMPORT_TARGET_MEGABYTES,
            )
        )
        return rows


class SpeedBenchmark:
    """One run of `manage.py benchmark`: in process, over HTTP (gunicorn on loopback) and on raw sqlite3.

    progress receives a line for each stage, as the command shows it on standard error.
    """

    def __init__(self, progress: Callable[[str], None]) -> None:
        self._say = progress

    def measure(self, **options: Any) -> Results:
        """Seed a fresh SQLite database in a temporary folder, time everything on it, and remove it (unless keep)."""
        workdir = Path(tempfile.mkdtemp(prefix="memoryhub-benchmark-"))
        database_settings = connection.settings_dict
        original_name = database_settings["NAME"]
        try:
            connection.close()
            database_settings["NAME"] = str(workdir / "memoryhub.sqlite3")
            return self.run(workdir, **options)
        finally:
            connection.close()
            database_settings["NAME"] = original_name
            if options["keep"]:
                self._say(f"Kept {workdir}")
            else:
                shutil.rmtree(workdir, ignore_errors=True)

    @staticmethod
    def command_line(options: dict) -> str:
        parts = ["python manage.py benchmark", f"--entries {options['entries']}", f"--users {options['users']}"]
        if options["report"]:
            parts.append(f"--report {options['report']}")
        return " ".join(parts)

    def progress(self, message: str) -> None:
        self._say(f"[{time.strftime('%H:%M:%S')}] {message}")

    def run(self, workdir: Path, **options: Any) -> Results:
        entries, users = options["entries"], options["users"]
        per_user = entries // users
        results = Results(
            entries=per_user * users,
            users=users,
            per_user=per_user,
            small_entries=min(workload.SMALL_USER_ENTRIES, per_user),
            http_workers=options["http_workers"],
            http_clients=options["http_clients"],
            machine=workload.machine(),
            started=timezone.now().strftime("%Y-%m-%d %H:%M UTC"),
        )
        call_command("migrate", verbosity=0, interactive=False)
        account, token = account_create(username="benchmark")
        seed = workdir / "seed.jsonl"
        self.progress(f"writing {results.entries:,} + {results.small_entries:,} entries to {seed.name}")
        workload.seed_file(seed, owner="benchmark", users=users, per_user=per_user, small_entries=results.small_entries)
        connection.close()
        self.progress("importing them with import_memories in a process of its own")
        results.import_seconds, results.import_megabytes = self.time_import(seed, workdir)
        seed.unlink()
        results.entries += results.small_entries
        rng = random.Random(11)
        uid = workload.user_uid(0)
        self.progress("in process")
        results.in_process, results.queries = self.time_in_process(account, uid, per_user, options["samples"], rng)
        results.small_query = workload.time_calls(
            lambda number: list(
                selectors.entry_find(owner=account, uid=workload.SMALL_UID, query_text=workload.COMMON_WORD)[
                    : workload.QUERY_LIMIT
                ]
            ),
            options["samples"],
        )
        connection.close()
        self.progress("raw sqlite3")
        results.floor = workload.raw_floor(
            workdir / "memoryhub.sqlite3",
            owner_id=account.pk,
            uid=uid,
            per_user=per_user,
            samples=options["samples"],
            rng=rng,
        )
        self.progress(f"over HTTP: gunicorn with {options['http_workers']} workers, {options['http_clients']} clients")
        results.http = self.time_http(workdir, token, uid, per_user, rng, **options)
        return results

    def child_environment(self, workdir: Path) -> dict[str, str]:
        environment = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
        environment.update(
            MEMORYHUB_DATA_DIR=str(workdir),
            SECRET_KEY=environment.get("SECRET_KEY") or secrets.token_urlsafe(32),
            DEBUG="0",
            LOG_LEVEL="WARNING",
            ALLOWED_HOSTS="127.0.0.1",
            # The per-token rate limit (1200/minute by default) would cap the clients at 20 requests
            # a second: the benchmark measures the hub's speed, so its throwaway server runs without it.
            MEMORYHUB_RATE_LIMIT="",
            MEMORYHUB_CACHE_DIR=str(workdir / "cache"),
        )
        return environment

    def time_import(self, seed: Path, workdir: Path) -> tuple[float, float]:
        """Seconds and peak resident megabytes of `manage.py import_memories seed`."""
        command = [sys.executable, str(settings.BASE_DIR / "manage.py"), "import_memories", str(seed)]
        started = time.perf_counter()
        process = subprocess.Popen(
            command, env=self.child_environment(workdir), stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        assert process.stdout is not None  # stdout=PIPE
        output = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            raise CommandError(f"import_memories failed: {output.decode(errors='replace')}")
        self.progress(output.decode().strip())
        return seconds, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux

    def time_in_process(
        self, account: User, uid: str, per_user: int, samples: int, rng: random.Random
    ) -> tuple[dict[str, workload.Timing], dict[str, list[str]]]:
        keys = [workload.entry_key(rng.randrange(per_user)) for _ in range(samples)]
        calls = {
            "put": lambda number: services.entry_put(
                owner=account, uid=uid, key=keys[number], value=f"in-process put {number} tea"
            ),
            "get": lambda number: selectors.entry_get(owner=account, uid=uid, key=keys[number]),
            "query common": lambda number: list(
                selectors.entry_find(owner=account, uid=uid, query_text=workload.COMMON_WORD)[: workload.QUERY_LIMIT]
            ),
            "query rare": lambda number: list(
                selectors.entry_find(owner=account, uid=uid, query_text=workload.RARE_WORD)[: workload.QUERY_LIMIT]
            ),
            "list page": lambda number: list(selectors.entry_list(owner=account, uid=uid)[: workload.PAGE_SIZE]),
        }
        timings: dict[str, workload.Timing] = {}
        queries: dict[str, list[str]] = {}
        for operation, call in calls.items():
            with CaptureQueriesContext(connection) as captured:
                call(0)
            queries[operation] = [query["sql"] for query in captured.captured_queries]
            timings[operation] = workload.time_calls(call, samples)
        return timings, queries

    def time_http(
        self, workdir: Path, token: str, uid: str, per_user: int, rng: random.Random, **options: Any
    ) -> dict[str, workload.Timing]:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        gunicorn = Path(sys.executable).with_name("gunicorn")
        command = [
            str(gunicorn), "memoryhub.wsgi", "--workers", str(options["http_workers"]), "--bind", f"127.0.0.1:{port}",
            "--timeout", "30", "--graceful-timeout", "5", "--log-level", "warning", "--chdir", str(settings.BASE_DIR),
        ]  # fmt: skip
        server = subprocess.Popen(command, env=self.child_environment(workdir), preexec_fn=_stop_with_parent)
        try:
            workload.wait_for_port(port, seconds=SERVER_START_SECONDS, alive=lambda: server.poll() is None)
            base = f"/api/v1/users/{uid}/memories"
            clients = options["http_clients"]

            def key_paths(count: int) -> list[str]:
                return [f"{base}/{workload.entry_key(rng.randrange(per_user))}" for _ in range(count)]

            # Warm up: every worker loads the project on its first requests.
            workload.time_http(port, token, [workload.HttpRequestPlan("GET", key_paths(10)) for _ in range(clients)])
            per_client = max(1, options["samples"] // clients)
            plans = {
                "put": [
                    workload.HttpRequestPlan("PUT", key_paths(per_client), workload.json_body(f"http put {client} tea"))
                    for client in range(clients)
                ],
                "get": [
                    workload.HttpRequestPlan("GET", key_paths(max(1, options["http_requests"] // clients)))
                    for _ in range(clients)
                ],
                "query common": [
                    workload.HttpRequestPlan(
                        "GET", [f"{base}?q={workload.COMMON_WORD}&page_size={workload.QUERY_LIMIT}"] * per_client
                    )
                    for _ in range(clients)
                ],
                "query rare": [
                    workload.HttpRequestPlan(
                        "GET", [f"{base}?q={workload.RARE_WORD}&page_size={workload.QUERY_LIMIT}"] * per_client
                    )
                    for _ in range(clients)
                ],
                "list page": [
                    workload.HttpRequestPlan("GET", [f"{base}?page_size={workload.PAGE_SIZE}"] * per_client)
                    for _ in range(clients)
                ],
            }
            return {operation: workload.time_http(port, token, plan) for operation, plan in plans.items()}
        finally:
            server.terminate()
            try:
                server.wait(SERVER_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _stop_with_parent() -> None:
    """In the server's process: receive SIGTERM if the benchmark dies, so no server is left behind."""
    # Not Linux (OSError): the finally block in time_http still stops the server.
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def render_report(results: Results, *, command: str) -> str:
    ms = workload.milliseconds
    lines = [
        "# Benchmarks",
        "",
        f"Latest run: `{command}`, started {results.started}. {results.entries:,} entries for one account: "
        f"{results.users} users of {results.per_user:,} entries each, and one of {results.small_entries:,}. "
        f"Latencies in milliseconds; each ratio is the hub's p50 over raw sqlite3's.",
        "",
        "## Machine",
        "",
        *(f"- {name}: {value}" for name, value in results.machine.items()),
        "",
        "## Figures",
        "",
        f"In process: services and selectors, one call after another. Over HTTP: gunicorn with "
        f"{results.http_workers} workers on loopback, {results.http_clients} client processes at once, a new "
        f"connection per request, the per-token rate limit off. Raw sqlite3: the same statements on one "
        f"persistent connection.",
        "",
        "| operation | in process p50 | p95 | HTTP p50 | p95 | HTTP req/s | sqlite3 p50 | p95 "
        "| in process / sqlite3 | HTTP / sqlite3 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for operation in workload.OPERATIONS:
        local, remote, floor = results.in_process[operation], results.http[operation], results.floor[operation]
        lines.append(
            f"| {operation} | {ms(local.p50)} | {ms(local.p95)} | {ms(remote.p50)} | {ms(remote.p95)} | "
            f"{remote.per_second:,.0f} | {ms(floor.p50)} | {ms(floor.p95)} | {local.p50 / floor.p50:.1f} | "
            f"{remote.p50 / floor.p50:.1f} |"
        )
    assert results.small_query is not None  # measured before the report is written
    lines += [
        "",
        f"Query for the common word at {results.small_entries:,} entries (in process): "
        f"p50 {ms(results.small_query.p50)}, "
        f"p95 {ms(results.small_query.p95)}.",
        f"Import (`manage.py import_memories`, its own process): {results.entries:,} entries "
        f"in {results.import_seconds:.1f} s, peak resident memory {results.import_megabytes:.0f} MB.",
        "",
        "## Targets",
        "",
        "| target | measured | holds |",
        "|---|---|---|",
        *(
            f"| {target} | {measured} | {'yes' if holds else '**no**'} |"
            for target, measured, holds in results.targets()
        ),
        "",
        "## Queries Django ran (in process, one call each)",
        "",
    ]
    for operation, statements in results.queries.items():
        lines.append(f"- {operation}: {len(statements)} queries")
        lines.extend(f"  - `{statement[:300]}`" for statement in statements)
    return "\n".join(lines) + "\n"


def write_report(path: Path, report: str) -> None:
    """Write the report to path, keeping whatever follows ANALYSIS_MARKER in the file already there."""
    analysis = ""
    if path.exists():
        previous = path.read_text()
        if ANALYSIS_MARKER in previous:
            analysis = previous.split(ANALYSIS_MARKER, 1)[1]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report + "\n" + ANALYSIS_MARKER + (analysis or "\n"))
