"""The HTTP benchmark's report: its table, its targets, and a section of its own in a shared file."""

import re
import subprocess
from pathlib import Path

from benchmarks import serving
from benchmarks.serving import WRK_PUT, Report, Row, report_markdown, targets, write_report


def _report(database: str = "SQLite", get_rate: float = 450.0) -> Report:
    report = Report(server="gunicorn", workers=2, entries=20000, seconds=10, database=database, load_before="1")
    report.rows = [
        Row("floor: DRF APIView, token auth, ModelSerializer", 500.0, 4.0),
        Row("hub: GET one entry", get_rate, 4.4),
        Row("hub: PUT one entry", 300.0, 6.0),
        Row("hub: list page (50 of 20,000)", 200.0, 9.0),
        Row("Honcho: sessions list by metadata (one record)", note="skipped: HONCHO_URL not set"),
    ]
    return report


def test_the_targets_compare_the_hub_with_the_floor_and_with_its_own_get():
    measured = {
        what: None if ratio is None else round(ratio, 2) for what, ratio, _comparison, _target in targets(_report())
    }

    assert measured["hub GET req/s / DRF floor req/s (8 connections)"] == 0.9
    assert measured["hub GET p50 / DRF floor p50 (1 connection)"] == 1.1
    assert measured["hub PUT req/s / hub GET req/s"] == 0.67
    assert measured["list page (50 of 20,000) req/s / hub GET req/s"] == 0.44
    assert not any(what.startswith("hub GET req/s / Honcho") for what in measured), "Honcho was skipped"


def test_the_table_says_which_targets_hold_and_why_a_row_is_missing():
    text = report_markdown(_report())

    assert "| hub PUT req/s / hub GET req/s | 0.67 | >= 0.7 | NO |" in text
    assert "| hub GET req/s / DRF floor req/s (8 connections) | 0.90 | >= 0.9 | yes |" in text
    assert "skipped: HONCHO_URL not set" in text


def test_the_table_says_whether_the_searches_compared_vectors():
    embedded, words_alone = _report(), _report()
    words_alone.embeddings = "off"

    assert "20,000 entries for the user (embedded by the local model: searches by words and meaning" in (
        report_markdown(embedded)
    )
    assert "(embeddings off: searches by words alone)" in report_markdown(words_alone)


def test_the_searches_by_words_alone_are_shown_beside_the_targets_not_among_them():
    report = _report()
    report.rows += [
        Row("hub: ?q= rare word (5 matches)", 225.0, 5.0),
        Row(f"{serving.WORDS_ONLY}?q= rare word (5 matches)", 405.0, 4.5),
    ]
    text = report_markdown(report)

    assert [what for what, *_ in targets(report) if "rare" in what] == [
        "?q= rare word (5 matches) req/s / hub GET req/s"
    ]
    assert "by words alone (embeddings off), req/s / hub GET req/s: rare word (5 matches) 0.90x." in text
    assert "by words alone" not in report_markdown(_report())


def test_the_words_alone_are_the_searches_of_the_hub_rows():
    searches = [path for name, path, _script in serving.hub_rows(20000, "/k") if name.startswith("hub: ?q=")]
    alone = serving.words_only_rows(20000)

    assert [path for _name, path, _script in alone] == searches
    assert all(name.startswith(serving.WORDS_ONLY) and not script for name, _path, script in alone)


def test_the_report_replaces_its_own_section_and_keeps_the_others(tmp_path):
    path = tmp_path / "BENCHMARKS.md"
    path.write_text("# Benchmarks\n\n## Recall\n\nrecall figures\n")

    write_report(_report(get_rate=450.0), path)
    write_report(_report(database="PostgreSQL"), path)
    write_report(_report(get_rate=480.0), path)
    text = path.read_text()

    assert text.startswith("# Benchmarks\n\n## Recall\n\nrecall figures\n")
    assert text.count("## HTTP side by side (SQLite)") == 1
    assert text.count("## HTTP side by side (PostgreSQL)") == 1
    assert "| hub: GET one entry | 480 |" in text
    assert "| hub: GET one entry | 450 | 0.90x" in text, "the PostgreSQL section keeps its own figures"


def test_every_run_of_the_put_script_writes_keys_no_run_wrote_before(tmp_path, monkeypatch):
    # A PUT of a key that already holds the same value changes nothing and costs far less than a write: each
    # run of wrk names its keys after a run of its own, so every PUT it sends creates a key.
    scripts = []

    def wrk(command, **_options):
        scripts.append(Path(command[command.index("-s") + 1]).read_text())
        return subprocess.CompletedProcess(command, 0, stdout="Requests/sec: 100.0\nERRORS 0\n", stderr="")

    monkeypatch.setattr(serving.subprocess, "run", wrk)
    for _ in range(2):
        serving._wrk(
            "http://127.0.0.1:1/memories/", connections=8, seconds=1, headers={}, script=WRK_PUT, workdir=tmp_path
        )

    runs = [re.search(r'^run = "(\w+)"$', script, flags=re.M) for script in scripts]
    assert all(runs) and runs[0].group(1) != runs[1].group(1)
    assert '"put-" .. run .. "-" .. counter' in WRK_PUT


def test_the_reads_are_measured_before_the_puts_add_entries_to_the_user():
    rows = serving.hub_rows(20000, "/api/v1/users/u/memories/k")
    writes = [index for index, (_name, _path, script) in enumerate(rows) if script == WRK_PUT]
    assert writes == [len(rows) - 1]
