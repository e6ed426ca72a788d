"""The work behind `manage.py benchmark_agents`: what the doors for agents cost.

In process: selectors.context_block at the default budget, with no query, a common word and a rare
one, for a user with --entries memories. The target: p50 <= 5 ms at 1,000 entries.
"""

import random
from collections.abc import Callable
from pathlib import Path

from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection

from memories import benchmark, context, selectors, services
from memories.accounts import account_create

CONTEXT_TARGET_SECONDS = 0.005
BENCHMARK_ACCOUNT = "agents-benchmark"


def seed(*, owner: User, users: int, entries: int) -> None:
    """entries memories for each of users uids, in batches, written through the services."""
    rng = random.Random(7)
    for user in range(users):
        operations = [
            services.BatchOperation(
                op="put", key=benchmark.entry_key(number), value=benchmark.entry_value(rng, number), kind="fact"
            )
            for number in range(entries)
        ]
        for start in range(0, entries, services.BATCH_MAX_OPERATIONS):
            services.entries_batch(
                owner=owner,
                uid=benchmark.user_uid(user),
                operations=operations[start : start + services.BATCH_MAX_OPERATIONS],
            )


def time_context(*, owner: User, uid: str, samples: int) -> dict[str, benchmark.Timing]:
    calls: dict[str, Callable[[int], object]] = {
        "context, no query": lambda number: selectors.context_block(owner=owner, uid=uid),
        f"context, q={benchmark.COMMON_WORD}": lambda number: selectors.context_block(
            owner=owner, uid=uid, query_text=benchmark.COMMON_WORD
        ),
        f"context, q={benchmark.RARE_WORD}": lambda number: selectors.context_block(
            owner=owner, uid=uid, query_text=benchmark.RARE_WORD
        ),
    }
    timings = {}
    for label, call in calls.items():
        call(0)  # warm the statement cache
        timings[label] = benchmark.time_calls(call, samples)
    return timings


def _table(rows: list[tuple[str, benchmark.Timing]]) -> list[str]:
    lines = ["| operation | p50 ms | p95 ms |", "|---|---:|---:|"]
    for label, timing in rows:
        lines.append(f"| {label} | {benchmark.milliseconds(timing.p50)} | {benchmark.milliseconds(timing.p95)} |")
    return lines


def run(*, workdir: Path, entries: int, users: int, samples: int, http: bool, progress: Callable[[str], None]) -> str:
    """Seed the database the connection now points at, time everything, and return the report (Markdown)."""
    call_command("migrate", verbosity=0, interactive=False)
    owner, _token = account_create(username=BENCHMARK_ACCOUNT)
    progress(f"seeding {users} users x {entries} entries")
    seed(owner=owner, users=users, entries=entries)
    uid = benchmark.user_uid(0)
    progress("context block, in process")
    context_timings = time_context(owner=owner, uid=uid, samples=samples)
    block = selectors.context_block(owner=owner, uid=uid)
    machine = benchmark.machine()
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
    verdict = "holds" if worst <= CONTEXT_TARGET_SECONDS else "does NOT hold"
    lines.append(
        f"Target context p50 <= {CONTEXT_TARGET_SECONDS * 1000:g} ms: worst p50 "
        f"{benchmark.milliseconds(worst)} ms, {verdict}."
    )
    connection.close()
    return "\n".join(lines) + "\n"
