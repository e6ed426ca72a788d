"""`manage.py benchmark`, run tiny: it must run end to end and write a report that holds every figure.

The real figures come from a full run (docs/BENCHMARKS.md); this only proves the command works.
"""

import os
import subprocess
import sys

import pytest
from django.conf import settings

from benchmarks.speed import ANALYSIS_MARKER
from benchmarks.workload import OPERATIONS

pytestmark = [pytest.mark.process, pytest.mark.slow]


def test_a_tiny_run_writes_every_figure_and_keeps_the_hand_written_analysis(tmp_path):
    report = tmp_path / "BENCHMARKS.md"
    report.write_text(f"# stale figures\n\n{ANALYSIS_MARKER}\nWhy the HTTP target misses: ...\n")
    environment = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
    environment.update(MEMORYHUB_DATA_DIR=str(tmp_path / "data"), SECRET_KEY="benchmark-test-only")
    command = [
        sys.executable, "manage.py", "benchmark", "--entries", "300", "--users", "3", "--samples", "4",
        "--http-requests", "8", "--http-clients", "2", "--report", str(report),
    ]  # fmt: skip
    completed = subprocess.run(
        command, cwd=settings.BASE_DIR, env=environment, capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr
    text = report.read_text()
    assert "stale figures" not in text
    assert text.endswith(f"{ANALYSIS_MARKER}\nWhy the HTTP target misses: ...\n")
    for operation in OPERATIONS:
        assert f"| {operation} |" in text
    assert "- cpu:" in text
    assert "| import 1,000,000 entries in <= 90 s" in text
    assert "over HTTP: >= 1,000 gets/s" in text
    assert "400 entries" in text  # 3 users of 100, and one of 100 for the query at the small size
    # the benchmark works in a temporary folder of its own: the hub's database is never created or touched
    assert not list((tmp_path / "data").glob("*.sqlite3*"))
