"""The recall benchmark's report: an aligned table for the terminal, Markdown for docs/RECALL.md."""

from pathlib import Path

from benchmarks.recall import (
    RESULT_LIMIT,
    SHIPPED,
    UNSEEN,
    RecallReport,
    Scores,
    SizeResult,
    group_labels,
)

ANALYSIS_MARKER = (
    "<!-- Everything below this line is written by hand and kept when the benchmark rewrites the file. -->"
)


def _cell(scores: Scores | None) -> str:
    if scores is None:
        return "-"
    return f"{scores.recall_at_1:.3f} {scores.recall_at_5:.3f} {scores.mrr:.3f}"


def _group_count(size: SizeResult, label: str) -> int:
    for ranking in size.rankings:
        scores = ranking.scores.get(label)
        if scores is not None:
            return scores.questions
    return 0


def size_rows(size: SizeResult) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, notes) of one size: per group, each measured ranking's recall@1, recall@5 and MRR."""
    measured = [ranking for ranking in size.rankings if not ranking.unavailable]
    header = ["questions", "n", *(f"{ranking.name} R@1 R@5 MRR" for ranking in measured)]
    rows = [
        [label, str(_group_count(size, label)), *(_cell(r.scores.get(label)) for r in measured)]
        for label in group_labels()
    ]
    for name in (SHIPPED, UNSEEN):
        counts = [ranking.no_answer.get(name) for ranking in measured]
        questions = counts[0].questions if counts and counts[0] else 0
        rows.append([f"no answer ({name})", str(questions), *(c.text() if c else "-" for c in counts)])
    for name in (SHIPPED, UNSEEN):
        counts = [ranking.answerable_nothing.get(name) for ranking in measured]
        questions = counts[0].questions if counts and counts[0] else 0
        rows.append([f"with an answer ({name})", str(questions), *(c.text() if c else "-" for c in counts)])
    rows.append(["query p50 ms", "", *(f"{ranking.timing.p50_ms:.3f}" for ranking in measured)])
    rows.append(["query p95 ms", "", *(f"{ranking.timing.p95_ms:.3f}" for ranking in measured)])
    notes = [
        f"{ranking.name}: not available ({ranking.unavailable})" for ranking in size.rankings if ranking.unavailable
    ]
    return header, rows, notes


def _size_title(report: RecallReport, size: SizeResult) -> str:
    embedded = f", {size.embedded:,} embedded in {size.embed_seconds:.1f} s" if size.embedded else ""
    return (
        f"{size.per_user:,} entries per user: {size.users} users, {size.entries:,} entries, "
        f"loaded in {size.load_seconds:.1f} s{embedded}"
    )


def _questions_line(report: RecallReport) -> str:
    chosen = "all" if report.question_set == "all" else f"the {report.question_set} part"
    return (
        f"shipped set: {chosen}, {report.shipped_questions} questions; "
        f"unseen set: {report.unseen_questions} questions; "
        f"{RESULT_LIMIT} results asked per question; {report.database}; MEMORYHUB_EMBEDDINGS={report.embeddings}"
    )


def report_table(report: RecallReport) -> str:
    """The report as aligned text: each size's groups and rankings, then the targets."""
    lines = [f"Recall benchmark, {report.started} ({report.machine})", _questions_line(report)]
    for size in report.sizes:
        header, rows, notes = size_rows(size)
        widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
        lines += ["", _size_title(report, size)]
        for row in [header, *rows]:
            cells = [row[0].ljust(widths[0])] + [
                cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)
            ]
            lines.append("  ".join(cells).rstrip())
        lines += notes
    lines += ["", "Targets"]
    for target in report.targets():
        lines.append(f"  {target.verdict():<12}  {target.text}: {target.measured}")
    return "\n".join(lines)


def _markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def report_markdown(report: RecallReport, *, command: str) -> str:
    """The report as the top of docs/RECALL.md (the hand-written analysis below ANALYSIS_MARKER is kept apart)."""
    lines = [
        "# Recall",
        "",
        f"Written by `{command}` on {report.started} ({report.machine}).",
        "",
        _questions_line(report) + ".",
        "",
        (
            "Each cell is recall@1, recall@5 and MRR. The sets are `evaluation/data/recall_set.json` (tune and test) "
            "and `evaluation/data/recall_unseen.json` (never tuned on); how they are made and scored: "
            "`benchmarks/recall.py`."
        ),
        "",
        "## Targets",
        "",
        *_markdown_table(
            ["target", "measured", "verdict"], [[t.text, t.measured, t.verdict()] for t in report.targets()]
        ),
    ]
    for size in report.sizes:
        header, rows, notes = size_rows(size)
        lines += ["", f"## {_size_title(report, size)}", "", *_markdown_table(header, rows)]
        if notes:
            lines += ["", *(f"- {note}" for note in notes)]
    lines += ["", "## The rankings", ""]
    for ranking in report.sizes[0].rankings if report.sizes else []:
        lines.append(f"- `{ranking.name}`: {ranking.description}.")
    return "\n".join(lines) + "\n"


def report_write(path: Path, markdown: str) -> None:
    """Write markdown to path, keeping whatever the file held below ANALYSIS_MARKER."""
    target = Path(path)
    kept = ""
    if target.exists():
        current = target.read_text(encoding="utf-8")
        if ANALYSIS_MARKER in current:
            kept = current[current.index(ANALYSIS_MARKER) :]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(markdown + ("\n" + kept if kept else ""), encoding="utf-8")
