"""Time the meta and kind filters on list and search, in process, on the database the hub is configured with.

Seeds a throwaway account with one user of --per-user entries (meta {"project": one of 10 names, "n": 0-99},
kind "fact" or "preference"; the vocabulary of `manage.py benchmark`), times the API's first page (its
bounded count and 50 results) unfiltered, with ?meta.project= (a tenth of the entries), with
?meta.project__in= (three tenths), with ?kind__in=, and ?q= with and without ?meta.project=, then removes
the account again. Embeddings are off while it runs (the filter narrows the lexical side; the hybrid one
honours it the same way).
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
from memories.filters import filter_from_params

ACCOUNT = "benchmark-filters"
IMPORT_CHUNK = 2000
API_PAGE = 50
PROJECTS = [f"project{number}" for number in range(10)]


class Command(BaseCommand):
    help = "Time ?meta.FIELD=, ?meta.FIELD__in= and ?kind__in= on list and search (the API's first page), in process."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--per-user", type=int, default=10_000, help="Entries of the user (default 10,000).")
        parser.add_argument("--samples", type=int, default=200, help="Timed calls per figure (default 200).")

    def handle(self, *args: object, per_user: int, samples: int, **options: object) -> None:
        if per_user < 1 or samples < 2:
            raise CommandError("Need --per-user >= 1 and --samples >= 2.")
        if get_user_model().objects.filter(username=ACCOUNT).exists():
            raise CommandError(f"An account named {ACCOUNT!r} exists: remove it first.")
        account, _ = account_create(username=ACCOUNT)
        try:
            with override_settings(MEMORYHUB_EMBEDDINGS="off", MEMORYHUB_WRITE_GUARD=False):
                self.seed(account, per_user=per_user)
                self.report(account, per_user=per_user, samples=samples)
        finally:
            account.delete()

    def seed(self, account: User, *, per_user: int) -> None:
        rng = random.Random(7)
        started = time.perf_counter()
        records = [
            services.ImportRecord(
                uid=workload.user_uid(0),
                key=workload.entry_key(number),
                value=workload.entry_value(rng, number),
                kind="fact" if number % 4 == 0 else "preference",
                meta={"project": PROJECTS[number % len(PROJECTS)], "n": number % 100},
            )
            for number in range(per_user)
        ]
        for start in range(0, len(records), IMPORT_CHUNK):
            services.entries_import(owner=account, records=records[start : start + IMPORT_CHUNK])
        services.search_statistics_refresh()
        self.stderr.write(f"seeded {per_user:,} entries in {time.perf_counter() - started:.1f} s")

    def report(self, account: User, *, per_user: int, samples: int) -> None:
        uid = workload.user_uid(0)
        cases: list[tuple[str, dict[str, str]]] = [
            ("list, no filter", {}),
            ("list, ?meta.project=project3", {"meta.project": "project3"}),
            ("list, ?meta.project__in=project1,project2,project3", {"meta.project__in": "project1,project2,project3"}),
            ("list, ?meta.n=42", {"meta.n": "42"}),
            ("list, ?kind__in=fact", {"kind__in": "fact"}),
            (f"?q={workload.COMMON_WORD}, no filter", {"q": workload.COMMON_WORD}),
            (
                f"?q={workload.COMMON_WORD}&meta.project=project3",
                {"q": workload.COMMON_WORD, "meta.project": "project3"},
            ),
        ]
        self.stdout.write(
            f"The API's first page (bounded count + 50 results) in process on {connection.vendor}, "
            f"{per_user:,} entries of one user, {samples} calls each (ms):\n"
        )
        self.stdout.write("| read | matches | p50 | p95 |")
        self.stdout.write("|---|---|---|---|")
        for label, params in cases:
            query_text = params.pop("q", "")

            def page(number: int, params: dict[str, str] = params, query_text: str = query_text) -> int:
                filters = filter_from_params(params)
                if query_text:
                    found = selectors.entry_find(owner=account, uid=uid, query_text=query_text, filters=filters)
                    list(found[0 : API_PAGE + 1])
                    return found.count()
                entries = selectors.entry_list(owner=account, uid=uid, filters=filters)
                list(entries[0 : API_PAGE + 1])
                return entries[:1001].count()

            matches = page(0)
            timing = workload.time_calls(page, samples)
            self.stdout.write(f"| {label} | {matches:,} | {timing.p50 * 1000:.2f} | {timing.p95 * 1000:.2f} |")
