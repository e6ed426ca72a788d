"""The pieces of `manage.py benchmark`: seed data, time operations three ways, write the report.

The same five operations (put, get, query for a common word, query for a rare word, a list page)
are timed in process through the services and selectors, over HTTP against a real server on
loopback with several concurrent clients, and on raw sqlite3 with one persistent connection: the
floor that the hub's figures are divided by.
"""

import functools
import http.client
import json
import multiprocessing
import os
import platform
import random
import sqlite3
import time
import timeit
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.utils import timezone

from benchmarks.timing import percentile, timed
from memories import exchange, search

# The vocabulary that values are drawn from: each word is in about one value in eight.
WORDS = (  # noqa: SIM905 - the vocabulary reads better as lines of words than as a column
    "python vim emacs french coffee tea morning evening rust java kotlin swift dark light mode tabs "
    "spaces concise verbose formal casual email chat meetings remote office music jazz quiet early "
    "late metric imperial spicy vegan running cycling reading travel budget detailed summary bullet"
).split()
COMMON_WORD = "coffee"
RARE_WORD = "quetzal"
# One entry in RARE_EVERY holds the rare word.
RARE_EVERY = 10_000
WORDS_PER_VALUE = 6
SMALL_USER_ENTRIES = 1_000
PAGE_SIZE = 50
QUERY_LIMIT = 10
OPERATIONS = ("put", "get", "query common", "query rare", "list page")


def user_uid(number: int) -> str:
    return f"user{number}"


SMALL_UID = "small"


def entry_key(number: int) -> str:
    return f"key-{number:07d}"


def entry_value(rng: random.Random, number: int) -> str:
    words = [rng.choice(WORDS) for _ in range(WORDS_PER_VALUE)]
    if number % RARE_EVERY == RARE_EVERY // 2:
        words.insert(rng.randrange(len(words)), RARE_WORD)
    return " ".join(words) + f" (note {number})"


def seed_file(path: Path, *, owner: str, users: int, per_user: int, small_entries: int, seed: int = 7) -> int:
    """Write an export file of users x per_user entries plus small_entries for SMALL_UID; returns the count."""
    rng = random.Random(seed)

    def rows() -> Iterator[tuple]:
        start = timezone.now() - timedelta(days=365)
        for uid, count in [(user_uid(number), per_user) for number in range(users)] + [(SMALL_UID, small_entries)]:
            for number in range(count):
                # One entry a minute, in key order: the newest entries have the highest numbers.
                moment = start + timedelta(minutes=number)
                yield (
                    owner,
                    uid,
                    entry_key(number),
                    entry_value(rng, number),
                    "fact",
                    {"seq": number},
                    "shared",
                    moment,
                    moment,
                    1,
                    None,  # never expires
                )

    with path.open("wb") as destination:
        return exchange.write_export(rows(), destination).count


@dataclass
class Timing:
    """Latencies of one operation, in seconds, and the wall time they took together."""

    samples: list[float] = field(default_factory=list)
    wall: float = 0.0

    def percentile(self, fraction: float) -> float:
        return percentile(self.samples, fraction)

    @property
    def p50(self) -> float:
        return self.percentile(0.50)

    @property
    def p95(self) -> float:
        return self.percentile(0.95)

    @property
    def per_second(self) -> float:
        return len(self.samples) / self.wall if self.wall else 0.0


def time_calls(call: Callable[[int], object], count: int) -> Timing:
    """Call call(i) for i in range(count), one after another, timing each."""
    timing = Timing()

    def every_call() -> None:
        for number in range(count):
            timing.samples.append(timed(functools.partial(call, number))[1])

    _, timing.wall = timed(every_call)
    return timing


# Raw sqlite3: the floor. The same statements the hub's operations come down to, on one connection.
RAW_GET = (
    "SELECT id, uid, key, value, kind, meta, created, updated, version FROM memories_memoryentry "
    "WHERE owner_id = ? AND uid = ? AND key = ?"
)
# The words index's rows of one user are one range of rowids: the user's number << 32, plus the entry's id.
RAW_USER_NUMBER = "SELECT id FROM memories_searchscope WHERE owner_id = ? AND uid = ?"
RAW_CANDIDATES = (
    "SELECT e.id, -bm25(memories_memoryentry_words, 0.0, 4.0, 1.0), e.updated FROM memories_memoryentry_words "
    "JOIN memories_memoryentry e ON e.id = (memories_memoryentry_words.rowid & 4294967295) "
    "WHERE memories_memoryentry_words MATCH ? AND memories_memoryentry_words.rowid BETWEEN ? AND ? "
    "ORDER BY memories_memoryentry_words.rowid DESC LIMIT ?"
)
RAW_BY_IDS = (
    "SELECT id, uid, key, value, kind, meta, created, updated, version FROM memories_memoryentry WHERE id IN ({ids})"
)
RAW_LIST = (
    "SELECT id, uid, key, value, kind, meta, created, updated, version FROM memories_memoryentry "
    "WHERE owner_id = ? AND uid = ? ORDER BY updated DESC, id DESC LIMIT ?"
)
RAW_PUT = (
    "UPDATE memories_memoryentry SET value = ?, value_folded = ?, version = version + 1, updated = ? "
    "WHERE owner_id = ? AND uid = ? AND key = ? RETURNING version"
)
RAW_EVENT = (
    "INSERT INTO memories_memoryevent (owner_id, uid, key, action, version, value_after, actor_id, at) "
    "VALUES (?, ?, ?, 'update', ?, ?, ?, ?)"
)


def raw_floor(
    database: Path, *, owner_id: int, uid: str, per_user: int, samples: int, rng: random.Random
) -> dict[str, Timing]:
    """Time the operations as plain SQL on one persistent sqlite3 connection."""
    link = sqlite3.connect(database, isolation_level=None)
    link.execute("PRAGMA journal_mode=WAL")
    link.execute("PRAGMA synchronous=NORMAL")
    keys = [entry_key(rng.randrange(per_user)) for _ in range(samples)]
    (user_number,) = link.execute(RAW_USER_NUMBER, (owner_id, uid)).fetchone()

    def put(number: int) -> None:
        now = time.strftime("%Y-%m-%d %H:%M:%S")
        link.execute("BEGIN IMMEDIATE")
        value = f"raw put {number} tea"
        (version,) = link.execute(RAW_PUT, (value, value, now, owner_id, uid, keys[number])).fetchone()
        link.execute(RAW_EVENT, (owner_id, uid, keys[number], version, f"raw put {number} tea", owner_id, now))
        link.execute("COMMIT")

    def query(word: str) -> list:
        # As memories.search does: the user's newest candidates from the words index, ranked, then
        # the best of them by id.
        first = user_number << 32
        match = f'{{key value}} : ("{word}")'
        candidates = link.execute(RAW_CANDIDATES, (match, first, first + (1 << 32) - 1, search.RANK_CAP)).fetchall()
        best = sorted(candidates, key=lambda row: (-row[1], row[2]), reverse=False)[:QUERY_LIMIT]
        ids = [row[0] for row in best]
        return link.execute(RAW_BY_IDS.format(ids=", ".join("?" * len(ids))), ids).fetchall()

    timings = {
        "put": time_calls(put, samples),
        "get": time_calls(lambda number: link.execute(RAW_GET, (owner_id, uid, keys[number])).fetchall(), samples),
        "query common": time_calls(lambda number: query(COMMON_WORD), samples),
        "query rare": time_calls(lambda number: query(RARE_WORD), samples),
        "list page": time_calls(lambda number: link.execute(RAW_LIST, (owner_id, uid, PAGE_SIZE)).fetchall(), samples),
    }
    link.close()
    return timings


# Over HTTP: each client is a process of its own, so the clients do not share one interpreter lock.
@dataclass(frozen=True)
class HttpRequestPlan:
    method: str
    paths: list[str]
    body: bytes | None = None


def _http_client(port: int, token: str, plan: HttpRequestPlan, timeout: float) -> list[float]:
    latencies = []
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json", "Host": "127.0.0.1"}
    for path in plan.paths:

        def request(path: str = path) -> int:
            link = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
            link.request(plan.method, path, body=plan.body, headers=headers)
            response = link.getresponse()
            response.read()
            link.close()
            return response.status

        status, seconds = timed(request)
        if status >= 300:
            raise RuntimeError(f"{plan.method} {path} answered {status}")
        latencies.append(seconds)
    return latencies


def time_http(port: int, token: str, plans: list[HttpRequestPlan], timeout: float = 30.0) -> Timing:
    """Run one plan per client process at once; every request's latency, and the wall time of all."""
    context = multiprocessing.get_context("fork")
    with context.Pool(len(plans)) as pool:
        results, wall = timed(lambda: pool.starmap(_http_client, [(port, token, plan, timeout) for plan in plans]))
    return Timing(samples=[latency for client in results for latency in client], wall=wall)


def wait_for_port(port: int, *, seconds: float, alive: Callable[[], bool]) -> None:
    """Return once something accepts connections on 127.0.0.1:port; raise TimeoutError after seconds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError("the server exited before it accepted connections")
        try:
            http.client.HTTPConnection("127.0.0.1", port, timeout=1).connect()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing accepted connections on 127.0.0.1:{port} within {seconds} s")


def machine() -> dict[str, str]:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) // 1024} MiB"
                break
    except OSError:
        pass
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    # A yardstick for how fast this machine ran Python at the time: an unloaded recent x86 core
    # takes about 10 microseconds.
    calibration = min(timeit.repeat("sum(range(1000))", number=2000, repeat=5)) / 2000
    return {
        "cpu": f"{cpu}, {os.cpu_count()} cores",
        "memory": memory,
        "load average (1, 5, 15 min) at start": load,
        "system": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "python speed, sum(range(1000))": f"{calibration * 1e6:.1f} microseconds",
    }


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1000:.3f}"


def json_body(value: str) -> bytes:
    return json.dumps({"value": value}).encode()
