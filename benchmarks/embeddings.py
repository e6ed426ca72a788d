"""The embeddings benchmark behind `manage.py benchmark_embeddings`: what semantic recall costs.

In a throwaway account (removed at the end, whatever happens), with the configured provider:

- write cost: `rounds` blocks of `writes` puts (new entries) with embeddings off, then on, alternated
  so that a change in the machine's load falls on both; p50 of each and their ratio;
- the worker's throughput: `per_user` entries imported for one user, then embedded by
  `embeddings_process_pending` batch after batch, as `manage.py embed --once` does: entries per second;
- a semantic query at that size, in process: embedding the query plus the cosine over the user's
  vectors (memories.search.vectors.semantic_ranked), p50 and p95 over `queries` questions, once with
  the user's vectors already cached (every search after the first) and once reading them from the
  database (the first search of a process, or after the user's vectors changed).
"""

import functools
import json
import os
import platform
import random
import secrets
import sqlite3
from dataclasses import asdict, dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import override_settings

from benchmarks.timing import Samples, timed
from memories import accounts, services
from memories.embeddings import get_provider
from memories.embeddings.store import embeddings_process_pending, user_vectors
from memories.search import vectors

BENCH_USERNAME_PREFIX = "memoryhub-embeddings-bench-"
# The target: a write with embeddings on costs no more than this times one with them off.
WRITE_RATIO_TARGET = 1.2
SAMPLE_PATH = Path(__file__).resolve().parent.parent / "scripts" / "model_choice_sample.json"
QUERY_LIMIT = 10
FILLER_SEED = 2026
FILLER_SUBJECTS = ("asked about", "wants a reminder for", "booked", "finished", "complained about", "shared a link on")
FILLER_THINGS = (
    "the quarterly report", "a dentist check-up", "the lease renewal", "sourdough baking", "the train ticket",
    "the design review", "marathon training", "the tax form", "jazz history", "the parking permit",
    "a table for four", "the grant form", "bird watching", "the sprint plan", "the vet visit", "chess openings",
)  # fmt: skip
FILLER_WHEN = ("on Monday", "before Friday", "next week", "at 9:00", "after lunch", "in March", "tonight")


def filler_values(count: int) -> list[tuple[str, str]]:
    """count (key, value) notes of the kind agents keep, the same on every run."""
    rng = random.Random(FILLER_SEED)
    return [
        (f"note_{number:05d}", f"{rng.choice(FILLER_SUBJECTS)} {rng.choice(FILLER_THINGS)} {rng.choice(FILLER_WHEN)}")
        for number in range(count)
    ]


@dataclass
class EmbeddingsReport:
    provider: str
    database: str
    machine: str
    writes_per_round: int
    rounds: int
    write_off_p50_ms: float
    write_on_p50_ms: float
    write_ratio: float
    per_user: int
    embedded: int
    embed_seconds: float
    embed_per_second: float
    query_cached_p50_ms: float
    query_cached_p95_ms: float
    query_uncached_p50_ms: float
    query_uncached_p95_ms: float

    def as_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    def as_table(self) -> str:
        return "\n".join(
            [
                f"provider {self.provider}; {self.database}; {self.machine}",
                f"write (put of a new entry), p50 of {self.rounds} x {self.writes_per_round} each: "
                f"embeddings off {self.write_off_p50_ms:.2f} ms, on {self.write_on_p50_ms:.2f} ms, "
                f"ratio {self.write_ratio:.2f} (target <= {WRITE_RATIO_TARGET}: "
                f"{'holds' if self.write_ratio <= WRITE_RATIO_TARGET else 'missed'})",
                f"worker: {self.embedded:,} entries embedded in {self.embed_seconds:.1f} s, "
                f"{self.embed_per_second:,.0f} entries/s",
                f"semantic query at {self.per_user:,} entries per user (embed the query + cosine): "
                f"p50 {self.query_cached_p50_ms:.2f} ms, p95 {self.query_cached_p95_ms:.2f} ms; "
                f"reading the vectors from the database: p50 {self.query_uncached_p50_ms:.2f} ms, "
                f"p95 {self.query_uncached_p95_ms:.2f} ms",
            ]
        )


def _questions() -> list[str]:
    sample = json.loads(SAMPLE_PATH.read_text())
    return [question for question, _ in sample["questions"]]


def _write_p50s(owner: User, *, writes: int, rounds: int) -> tuple[float, float]:
    """p50 of a put of a new entry with embeddings off and with the configured provider, rounds alternated."""
    off, on = Samples(), Samples()
    number = 0
    for _ in range(rounds):
        for mode, samples in (("off", off), (settings.MEMORYHUB_EMBEDDINGS, on)):
            with override_settings(MEMORYHUB_EMBEDDINGS=mode):
                for _ in range(writes):
                    number += 1
                    key = f"write_{number:06d}"
                    put = functools.partial(services.entry_put, owner=owner, uid="writer", key=key, value=f"note {key}")
                    samples.add(timed(put)[1])
    return off.p50_ms, on.p50_ms


def embeddings_benchmark_run(*, per_user: int, writes: int, rounds: int, queries: int) -> EmbeddingsReport:
    provider = get_provider()
    if provider is None:
        raise ValueError("MEMORYHUB_EMBEDDINGS is off: there is nothing to measure")
    owner, _ = accounts.account_create(username=BENCH_USERNAME_PREFIX + secrets.token_hex(4))
    try:
        provider.embed(["warm up"])
        off_ms, on_ms = _write_p50s(owner, writes=writes, rounds=rounds)
        while embeddings_process_pending():
            pass
        records = [services.ImportRecord(uid="reader", key=key, value=value) for key, value in filler_values(per_user)]
        services.entries_import(owner=owner, records=records)
        embedded = 0

        def embed_all() -> int:
            total = 0
            while stored := embeddings_process_pending():
                total += stored
            return total

        embedded, embed_seconds = timed(embed_all)
        questions = (_questions() * (queries // 40 + 1))[:queries]

        def query(text: str) -> list[tuple[int, float]]:
            (vector,) = provider.embed([text])
            return vectors.semantic_ranked(
                owner=owner, uid="reader", model=provider.name, query_vector=vector, limit=QUERY_LIMIT
            )

        query(questions[0])
        cached, uncached = Samples(), Samples()
        for text in questions:
            cached.add(timed(functools.partial(query, text))[1])
        for text in questions[: max(1, queries // 4)]:
            vectors.vectors_cache_clear()
            uncached.add(timed(functools.partial(query, text))[1])
        assert len(user_vectors(owner=owner, uid="reader", model=provider.name)[0]) == per_user
    finally:
        owner.delete()
    return EmbeddingsReport(
        provider=provider.name,
        database=f"SQLite {sqlite3.sqlite_version}" if connection.vendor == "sqlite" else connection.vendor,
        machine=f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        writes_per_round=writes,
        rounds=rounds,
        write_off_p50_ms=off_ms,
        write_on_p50_ms=on_ms,
        write_ratio=on_ms / off_ms,
        per_user=per_user,
        embedded=embedded,
        embed_seconds=embed_seconds,
        embed_per_second=embedded / embed_seconds if embed_seconds else 0.0,
        query_cached_p50_ms=cached.p50_ms,
        query_cached_p95_ms=cached.p95_ms,
        query_uncached_p50_ms=uncached.p50_ms,
        query_uncached_p95_ms=uncached.p95_ms,
    )
