"""`manage.py benchmark_agents`, run tiny: end to end, every figure in its report, each stdio case named.

The real figures come from a full run (docs/AGENTS.md); this only proves the command works.
"""

import os
import subprocess
import sys

import pytest
from django.conf import settings

pytestmark = [pytest.mark.process, pytest.mark.slow]


def test_a_tiny_run_reports_the_context_block_recall_and_each_kind_of_stdio_start(tmp_path):
    environment = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
    environment.update(MEMORYHUB_DATA_DIR=str(tmp_path / "data"), SECRET_KEY="benchmark-test-only")
    command = [sys.executable, "manage.py", "benchmark_agents", "--entries", "30", "--users", "2", "--samples", "10"]
    completed = subprocess.run(
        command, cwd=settings.BASE_DIR, env=environment, capture_output=True, text=True, timeout=600
    )

    assert completed.returncode == 0, completed.stderr
    report = completed.stdout
    for row in (
        "| context, no query |",
        "| context, q=coffee (the query's vector kept) |",
        "| context, q=quetzal (a new query: embedded each call) |",
        "| REST GET .../memories/?q= |",
        "| MCP tools/call recall (Streamable HTTP) |",
        "| `manage.py mcp --keep-answers` (what make install runs after the packages; no start) |",
        "| first start after the install (a fresh copy of the source, no bytecode) |",
        "| a start on a data folder nothing prepared (no kept answers) |",
        "| a later start, from the answers that one kept |",
    ):
        assert row in report, row
    assert "Target context p50 <= 5 ms" in report and "first start after an install" in report
    # the benchmark works in a temporary folder of its own: the hub's database is never created or touched
    assert not list((tmp_path / "data").glob("*.sqlite3*"))
