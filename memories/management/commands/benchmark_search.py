"""Time `?q=` in process, on the database the hub is configured with (SQLite, or PostgreSQL by DATABASE_URL).

Seeds a throwaway account with --users x --per-user entries (the vocabulary of `manage.py benchmark`:
the common word is in about one value in eight, the rare one in one in 10,000), then times the two
ways a search is read: the API's first page (its bounded count and 50 results) and the tool's top 10,
for the common and the rare word, and removes the account and its entries again. It times the
lexical ranking (MEMORYHUB_EMBEDDINGS=off while it runs); `manage.py benchmark_recall` times the
hybrid one.
"""

import random
import time

from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from django.test.utils import override_settings

from benchmarks import workload
from memories import selectors, services
from memories.accounts import account_create
from memories.search import LexicalMatches

ACCOUNT = "benchmark-search"
IMPORT_CHUNK = 2000
API_PAGE = 50


class Command(BaseCommand):
    help = "Time ?q= (the API's first page and the tool's top 10) for a common and a rare word, in process."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--users", type=int, default=5, help="Users of the throwaway account (default 5).")
        parser.add_argument("--per-user", type=int, default=10_000, help="Entries per user (default 10,000).")
        parser.add_argument("--samples", type=int, default=200, help="Timed calls per figure (default 200).")

    def handle(self, *args: object, users: int, per_user: int, samples: int, **options: object) -> None:
        if users < 1 or per_user < 1 or samples < 2:
            raise CommandError("Need --users >= 1, --per-user >= 1 and --samples >= 2.")
        if get_user_model().objects.filter(username=ACCOUNT).exists():
            raise CommandError(f"An account named {ACCOUNT!r} exists: remove it first.")
        account, _ = account_create(username=ACCOUNT)
        try:
            with override_settings(MEMORYHUB_EMBEDDINGS="off"):
                self.seed(account, users=users, per_user=per_user)
                self.report(account, users=users, per_user=per_user, samples=samples)
        finally:
            account.delete()

    def seed(self, account: User, *, users: int, per_user: int) -> None:
        rng = random.Random(7)
        started = time.perf_counter()
        for user in range(users):
            records = [
                services.ImportRecord(
                    uid=workload.user_uid(user),
                    key=workload.entry_key(number),
                    value=workload.entry_value(rng, number),
                    kind="fact",
                )
                for number in range(per_user)
            ]
            for start in range(0, len(records), IMPORT_CHUNK):
                services.entries_import(owner=account, records=records[start : start + IMPORT_CHUNK])
        services.search_statistics_refresh()
        self.stderr.write(f"seeded {users * per_user:,} entries in {time.perf_counter() - started:.1f} s")

    def report(self, account: User, *, users: int, per_user: int, samples: int) -> None:
        uid = workload.user_uid(0)
        self.stdout.write(
            f"`?q=` (embeddings off) in process on {connection.vendor}, {per_user:,} entries per user, "
            f"{users * per_user:,} in the hub, {samples} calls each (ms):\n"
        )
        self.stdout.write("| word | matches | API page (count + 50) p50 | p95 | tool top 10 p50 | p95 | order |")
        self.stdout.write("|---|---|---|---|---|---|---|")
        for label, word in (("common", workload.COMMON_WORD), ("rare", workload.RARE_WORD)):

            def page(number: int, word: str = word) -> None:
                # As the API reads a page: counted (on PostgreSQL, the count comes with the candidates).
                found = selectors.entry_search(owner=account, uid=uid, query_text=word, counted=True).entries
                list(found[0 : API_PAGE + 1])
                found.count()

            def top(number: int, word: str = word) -> None:
                list(selectors.entry_find(owner=account, uid=uid, query_text=word)[: workload.QUERY_LIMIT])

            page(0)
            paged, topped = workload.time_calls(page, samples), workload.time_calls(top, samples)
            found = selectors.entry_find(owner=account, uid=uid, query_text=word)
            assert isinstance(found, LexicalMatches)
            count = f"{found.count():,}" + ("" if found.count_exact else "+")
            self.stdout.write(
                f"| {label} ({word}) | {count} | {paged.p50 * 1000:.2f} | {paged.p95 * 1000:.2f} | "
                f"{topped.p50 * 1000:.2f} | {topped.p95 * 1000:.2f} | {found.order_at(0)} |"
            )
