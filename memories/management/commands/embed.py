"""`manage.py embed`: make the vectors of entries whose text changed, once or in a loop; re-embed everything."""

import signal
import threading
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import close_old_connections

from memories.embeddings.jobs import EmbeddingJob, EmbedReport
from memories.embeddings.store import DEFAULT_BATCH, embeddings_pending_count, embeddings_reembed

DEFAULT_INTERVAL = 1.0


class Command(BaseCommand):
    help = (
        "Semantic recall's vectors: --once embeds every pending entry and exits (1 if the provider failed), "
        "--loop keeps embedding until SIGTERM, --reembed marks every entry whose vector is missing or made by "
        "another model (after a model change or turning embeddings on), then embeds them."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        mode = parser.add_mutually_exclusive_group(required=True)
        mode.add_argument("--once", action="store_true", help="embed what is pending, then exit")
        mode.add_argument("--loop", action="store_true", help="keep embedding, polling every --interval seconds")
        mode.add_argument("--reembed", action="store_true", help="mark every entry not embedded by this model, embed")
        parser.add_argument(
            "--batch", type=int, default=DEFAULT_BATCH, help=f"texts per call (default {DEFAULT_BATCH})"
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=DEFAULT_INTERVAL,
            help=f"with --loop: seconds between polls ({DEFAULT_INTERVAL:g})",
        )

    def handle(
        self, *args: Any, once: bool, loop: bool, reembed: bool, batch: int, interval: float, **options: Any
    ) -> None:
        if settings.MEMORYHUB_EMBEDDINGS == "off":
            raise CommandError("MEMORYHUB_EMBEDDINGS is off: there is nothing to embed")
        if batch < 1 or interval <= 0:
            raise CommandError("--batch must be at least 1 and --interval greater than 0")
        job = EmbeddingJob(batch_size=batch)
        if reembed:
            self.stdout.write(f"{embeddings_reembed()} entries marked to embed again.")
        if loop:
            self.loop(job, interval=interval)
            return
        report = job.run()
        self.stdout.write(self.summary(report))
        if report.error:
            raise CommandError(f"the provider failed: {report.error}")

    def summary(self, report: EmbedReport) -> str:
        return f"embedded {report.embedded} entries in {report.batches} batch(es); {embeddings_pending_count()} pending"

    def loop(self, job: EmbeddingJob, *, interval: float, stop: threading.Event | None = None) -> None:
        """Embed what is pending, wait `interval` seconds, again, until SIGTERM or SIGINT (or `stop`)."""
        stop = stop or threading.Event()

        def request_stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        previous = {}
        if threading.current_thread() is threading.main_thread():
            previous = {number: signal.signal(number, request_stop) for number in (signal.SIGTERM, signal.SIGINT)}
        self.stdout.write(f"embed: polling every {interval:g} s; SIGTERM stops")
        try:
            while not stop.is_set():
                close_old_connections()
                report = job.run(stop)
                if report.embedded or report.error:
                    self.stdout.write(self.summary(report) + (f"; error: {report.error}" if report.error else ""))
                stop.wait(interval)
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)
        self.stdout.write("embed: stopped")
