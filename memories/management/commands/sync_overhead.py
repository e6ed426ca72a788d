from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from benchmarks.sync_overhead import sync_overhead_measure


class Command(BaseCommand):
    help = (
        "Time puts with sync off and with sync on while Honcho is down, side by side (p50, p95, mean), "
        "on the hub's database."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--writes", type=int, default=1000, help="puts per side (default 1000)")
        parser.add_argument(
            "--block", type=int, default=50, help="puts per block; the sides alternate block by block (default 50)"
        )
        parser.add_argument(
            "--worker-interval",
            type=float,
            default=0.5,
            help="seconds between the down-Honcho worker's drains (default 0.5)",
        )

    def handle(self, *args: Any, writes: int, block: int, worker_interval: float, **options: Any) -> None:
        if not 20 <= writes <= 100_000 or not 1 <= block <= writes:
            raise CommandError("--writes must be 20 to 100000, and --block 1 to --writes")
        if worker_interval <= 0:
            raise CommandError(f"--worker-interval must be greater than 0; got {worker_interval:g}")
        self.stdout.write(sync_overhead_measure(writes=writes, block=block, worker_interval=worker_interval).table())
