"""manage.py benchmark_filters: a tiny run times every filter and leaves nothing behind."""

import io

from django.contrib.auth import get_user_model
from django.core.management import call_command

from memories.models import MemoryEntry


def test_a_tiny_run_times_each_filter_and_removes_its_account(db):
    out = io.StringIO()
    call_command("benchmark_filters", "--per-user", "200", "--samples", "2", stdout=out, stderr=io.StringIO())
    rows = [line for line in out.getvalue().splitlines() if line.startswith("| ") and "---" not in line][1:]
    matches = {row.split(" | ")[0].lstrip("| "): row.split(" | ")[1] for row in rows}
    assert matches["list, no filter"] == "200"
    assert matches["list, ?meta.project=project3"] == "20"
    assert matches["list, ?meta.project__in=project1,project2,project3"] == "60"
    assert matches["list, ?meta.n=42"] == "2"
    assert matches["list, ?kind__in=fact"] == "50"
    assert len(rows) == 7
    assert not get_user_model().objects.filter(username="benchmark-filters").exists()
    assert not MemoryEntry.objects.exists()
