"""Figures the reliability tests measure, written to test-results/reliability.jsonl for docs/RELIABILITY.md."""

import json
from collections import Counter
from pathlib import Path
from typing import Any

from django.db import connection

PROJECT = Path(__file__).resolve().parents[2]


def record_figures(test_name: str, engine: str, **figures: Any) -> None:
    folder = PROJECT / "test-results"
    folder.mkdir(exist_ok=True)
    with open(folder / "reliability.jsonl", "a") as report:
        report.write(json.dumps({"test": test_name, "database": engine, **figures}) + "\n")


class FigureCounter:
    """Counts the answers a group of in-process tests got, by status."""

    def __init__(self, test_name: str) -> None:
        self.test_name = test_name
        self.statuses: Counter[int] = Counter()

    def count(self, status: int) -> None:
        self.statuses[status] += 1

    @property
    def total(self) -> int:
        return sum(self.statuses.values())

    def record(self) -> None:
        record_figures(
            self.test_name,
            connection.vendor,
            requests=self.total,
            refused_as_bad_input=self.statuses[400],
            server_errors=sum(count for status, count in self.statuses.items() if status >= 500),
            by_status={str(status): count for status, count in sorted(self.statuses.items())},
        )
