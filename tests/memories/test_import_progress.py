"""import_memories tells how far it is: entries done, rate and time left, on standard error."""

import io
import os
import re
import select
from pathlib import Path

from django.core.management import call_command

from memories import services


def _backup(owner, tmp_path: Path, entries: int) -> Path:
    for number in range(entries):
        services.entry_put(owner=owner, uid="alice", key=f"fact-{number}", value=f"fact number {number}")
    path = tmp_path / "backup.jsonl"
    call_command("export_memories", str(path), stdout=io.StringIO())
    return path


def test_off_a_terminal_each_chunk_prints_a_line_with_the_rate_and_time_left(owner, tmp_path: Path) -> None:
    backup = _backup(owner, tmp_path, 5)
    progress, report = io.StringIO(), io.StringIO()

    call_command("import_memories", str(backup), chunk_size=2, stdout=report, stderr=progress)

    lines = progress.getvalue().splitlines()
    assert [line.split(" entries")[0] for line in lines] == ["2 of 5", "4 of 5", "5 of 5"]
    assert re.fullmatch(r"5 of 5 entries \(100%\), [\d,]+/s, 0s left", lines[-1])
    assert "5 entries read" in report.getvalue()  # the report itself stays on standard output


def test_on_a_terminal_one_line_is_redrawn(owner, tmp_path: Path) -> None:
    backup = _backup(owner, tmp_path, 3)
    controller, terminal = os.openpty()
    with os.fdopen(terminal, "w") as stderr:
        call_command("import_memories", str(backup), chunk_size=1, stdout=io.StringIO(), stderr=stderr)
    shown = b""
    while select.select([controller], [], [], 0.5)[0]:
        try:
            shown += os.read(controller, 65536)
        except OSError:  # EIO: the terminal's other end is closed and everything was read
            break
    os.close(controller)
    redraws = shown.decode().split("\x1b[K")

    assert len(redraws) == 5  # a redraw per chunk, then the final count, then the closing newline
    assert redraws[-2].startswith("\r3 of 3 entries (100%)")
    assert redraws[-1].strip() == ""


def test_quiet_prints_no_progress(owner, tmp_path: Path) -> None:
    backup = _backup(owner, tmp_path, 2)
    progress = io.StringIO()

    call_command("import_memories", str(backup), quiet=True, stdout=io.StringIO(), stderr=progress)

    assert progress.getvalue() == ""
