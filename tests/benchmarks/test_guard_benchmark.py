"""The write guard's false positives on ordinary text, and `manage.py benchmark_guard`."""

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from benchmarks.guard import PARTS, false_positives_measure
from memories.models import HeldWrite, MemoryEntry


@pytest.mark.slow
def test_ordinary_text_in_every_script_is_not_flagged() -> None:
    report = false_positives_measure()

    # The corpus is real and large: a few hundred texts at least from each kind of source.
    for prefix in ("English", "Arabic", "Hebrew", "Persian", "Malayalam", "Khmer", "Emoji"):
        assert sum(count.texts for source, count in report.sources.items() if source.startswith(prefix)) >= 200
    assert report.joiner_sequences >= 700 and report.tag_flags >= 3
    assert {count.part for count in report.sources.values()} == set(PARTS)
    # The tune part (read while the rules were refined): none flagged.
    assert report.flagged("tune") == 0, report.table()
    assert report.flagged("held-out") == 0, report.table()


@pytest.mark.slow
@pytest.mark.django_db
def test_the_command_reports_false_positives_scans_and_the_write_ratio_then_removes_its_account(
    tmp_path, capsys: pytest.CaptureFixture
) -> None:
    report_file = tmp_path / "guard.md"
    call_command("benchmark_guard", "--writes", "20", "--block", "10", "--report", str(report_file))

    out = capsys.readouterr().out
    assert out == report_file.read_text(encoding="utf-8")
    assert "(target: 0 flagged)" in out and "Guard on / off: p50" in out and "| guard off |" in out
    assert not User.objects.filter(username__startswith="memoryhub-guard-bench-").exists()
    assert not MemoryEntry.objects.exists() and not HeldWrite.objects.exists()
