"""`manage.py benchmark_embeddings`: write cost with embeddings on and off, the worker's throughput, query time."""

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks.embeddings import embeddings_benchmark_run


class Command(BaseCommand):
    help = (
        "Measure what semantic recall costs with the configured provider, in a throwaway account removed "
        "afterwards: a put with embeddings off and on, the worker's entries per second, and a semantic "
        "query's time at --per-user entries."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--per-user", type=int, default=10_000, help="entries of the user searched (10,000)")
        parser.add_argument("--writes", type=int, default=100, help="puts per round and mode (100)")
        parser.add_argument("--rounds", type=int, default=4, help="rounds of off-then-on puts (4)")
        parser.add_argument("--queries", type=int, default=200, help="semantic queries timed (200)")
        parser.add_argument("--json", action="store_true", help="print JSON instead of the summary")

    def handle(
        self, *args: Any, per_user: int, writes: int, rounds: int, queries: int, json: bool, **options: Any
    ) -> None:
        if min(per_user, writes, rounds, queries) < 1:
            raise CommandError("--per-user, --writes, --rounds and --queries must be at least 1")
        try:
            report = embeddings_benchmark_run(per_user=per_user, writes=writes, rounds=rounds, queries=queries)
        except ValueError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(report.as_json() if json else report.as_table())
