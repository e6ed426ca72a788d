"""manage.py benchmark_recall on a tiny hand-made set whose figures are known without the hub.

The tiny set has one question per case that every ranking must agree on: a single word of a
memory (found by the substring scan and by any lexical ranking), a paraphrase sharing no word with
its answer (found by neither), a misspelling and a question with no answer. The expected recall of
the substring scan is computed here from the set alone, in plain Python, and compared with what
the command prints.
"""

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from pytest_django.fixtures import Settings

from benchmarks import recall, recall_report
from evaluation.recall_set import recall_set_load
from memories.models import MemoryEntry

SIZE = 40

TINY_SET = {
    "name": "tiny",
    "memories": [
        {
            "id": "ana.editor",
            "uid": "ana",
            "key": "editor",
            "value": "uses Neovim with a Lua config",
            "kind": "preference",
        },
        {"id": "ana.diet", "uid": "ana", "key": "diet", "value": "is allergic to peanuts", "kind": "fact"},
        {"id": "ana.music", "uid": "ana", "key": "music", "value": "listens to jazz", "kind": "preference"},
        {"id": "ben.editor", "uid": "ben", "key": "editor", "value": "uses Emacs", "kind": "preference"},
        {"id": "ben.diet", "uid": "ben", "key": "diet", "value": "vegan", "kind": "fact"},
    ],
    "questions": [
        {
            "id": "q1",
            "uid": "ana",
            "category": "shared_words",
            "split": "tune",
            "text": "neovim",
            "answers": ["ana.editor"],
        },
        {
            "id": "q2",
            "uid": "ana",
            "category": "paraphrase",
            "split": "test",
            "text": "food she cannot eat",
            "answers": ["ana.diet"],
        },
        {
            "id": "q3",
            "uid": "ben",
            "category": "shared_words",
            "split": "test",
            "text": "EMACS",
            "answers": ["ben.editor"],
        },
        {
            "id": "q4",
            "uid": "ana",
            "category": "typo",
            "split": "tune",
            "text": "neovin",
            "intended": "neovim",
            "answers": ["ana.editor"],
        },
        {"id": "q5", "uid": "ana", "category": "no_answer", "split": "tune", "text": "zebra", "answers": []},
        # Ben's editor is not Ana's: the answer must come from the question's own uid.
        {
            "id": "q6",
            "uid": "ben",
            "category": "shared_words",
            "split": "tune",
            "text": "editor",
            "answers": ["ben.editor"],
        },
    ],
}
TINY_UNSEEN = {
    "name": "tiny-unseen",
    "memories": [{"id": "cleo.city", "uid": "cleo", "key": "city", "value": "lives in Lyon", "kind": "fact"}],
    "questions": [
        {
            "id": "u1",
            "uid": "cleo",
            "category": "shared_words",
            "split": "unseen",
            "text": "lyon",
            "answers": ["cleo.city"],
        },
        {
            "id": "u2",
            "uid": "cleo",
            "category": "no_shared_words",
            "split": "unseen",
            "text": "which town is she based in",
            "answers": ["cleo.city"],
        },
    ],
}


@pytest.fixture
def tiny_files(tmp_path: Path) -> tuple[Path, Path]:
    shipped, unseen = tmp_path / "tiny.json", tmp_path / "tiny-unseen.json"
    shipped.write_text(json.dumps(TINY_SET), encoding="utf-8")
    unseen.write_text(json.dumps(TINY_UNSEEN), encoding="utf-8")
    return shipped, unseen


def _run(*arguments: str) -> str:
    out = StringIO()
    call_command("benchmark_recall", *arguments, stdout=out, stderr=StringIO())
    return out.getvalue()


def _json_run(tiny_files: tuple[Path, Path], *arguments: str) -> dict[str, Any]:
    shipped, unseen = tiny_files
    return json.loads(
        _run("--json", "--sizes", str(SIZE), "--recall-set", str(shipped), "--unseen-set", str(unseen), *arguments)
    )


def _ranking(document: dict[str, Any], name: str) -> dict[str, Any]:
    (size,) = document["sizes"]
    return next(ranking for ranking in size["rankings"] if ranking["name"] == name)


def expected_substring_recall_at_5(set_document: dict[str, Any], uid_entries: dict[str, list[tuple[str, str]]]) -> dict:
    """Per question id, the substring scan's recall@5, worked out from the entries alone.

    An answer is within the first five when it holds the whole question text (any case) and at
    most five of the user's entries do; the tiny set is made so that no question is in between.
    """
    expected = {}
    for question in set_document["questions"]:
        if not question["answers"]:
            continue
        needle = question["text"].casefold()
        holding = [
            key for key, value in uid_entries[question["uid"]] if needle in key.casefold() or needle in value.casefold()
        ]
        assert len(holding) <= 5
        answers = [memory_id.split(".", 1)[1] for memory_id in question["answers"]]
        expected[question["id"]] = sum(key in holding for key in answers) / len(answers)
    return expected


def _entries_of(set_document: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    entries: dict[str, list[tuple[str, str]]] = {}
    for memory in set_document["memories"]:
        entries.setdefault(memory["uid"], []).append((memory["key"], memory["value"]))
    for uid, labelled in entries.items():
        labelled += [(key, value) for key, value, _ in recall.filler_entries(uid=uid, count=SIZE - len(labelled))]
    return entries


@pytest.mark.slow
@pytest.mark.django_db
def test_substring_finds_a_shared_word_and_misses_a_paraphrase_as_worked_out_by_hand(
    tiny_files: tuple[Path, Path],
) -> None:
    document = _json_run(tiny_files)
    substring = _ranking(document, "substring")
    expected = expected_substring_recall_at_5(TINY_SET, _entries_of(TINY_SET))
    assert expected == {"q1": 1.0, "q2": 0.0, "q3": 1.0, "q4": 0.0, "q6": 1.0}
    scores = substring["scores"]
    assert scores["all"] == {"questions": 5, "recall_at_1": 0.6, "recall_at_5": 0.6, "mrr": 0.6}
    assert scores["shared_words"]["recall_at_5"] == 1.0
    assert scores["paraphrase"]["recall_at_5"] == 0.0
    assert scores["typo"]["recall_at_5"] == 0.0
    assert scores["tune"]["recall_at_5"] == pytest.approx((1.0 + 0.0 + 1.0) / 3, abs=1e-4)
    assert scores["test"]["recall_at_5"] == 0.5
    assert substring["no_answer"]["shipped"] == {
        "questions": 1,
        "nothing_found": 1,
        "rule": recall.NoAnswerRule.MATCHES_ONLY,
    }
    expected_unseen = expected_substring_recall_at_5(TINY_UNSEEN, _entries_of(TINY_UNSEEN))
    assert scores["unseen"]["recall_at_5"] == sum(expected_unseen.values()) / len(expected_unseen) == 0.5


@pytest.mark.django_db
def test_lexical_finds_a_single_word_of_a_memory_and_not_a_question_sharing_none(tiny_files: tuple[Path, Path]) -> None:
    lexical = _ranking(_json_run(tiny_files), "lexical")
    assert lexical["available"] is True
    assert lexical["scores"]["shared_words"] == {"questions": 3, "recall_at_1": 1.0, "recall_at_5": 1.0, "mrr": 1.0}
    assert lexical["scores"]["paraphrase"]["recall_at_5"] == 0.0
    assert lexical["scores"]["unseen shared_words"]["recall_at_5"] == 1.0
    assert lexical["p50_ms"] > 0 and lexical["p95_ms"] >= lexical["p50_ms"]


@pytest.mark.django_db
def test_the_table_shows_each_ranking_s_figures_and_what_is_not_available(
    tiny_files: tuple[Path, Path], settings: Settings
) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "off"
    shipped, unseen = tiny_files
    table = _run("--sizes", str(SIZE), "--recall-set", str(shipped), "--unseen-set", str(unseen))
    shared_row = next(line for line in table.splitlines() if line.startswith("shared_words"))
    assert shared_row.split() == ["shared_words", "3", "1.000", "1.000", "1.000", "1.000", "1.000", "1.000"]
    paraphrase_row = next(line for line in table.splitlines() if line.startswith("paraphrase"))
    assert paraphrase_row.split()[2:5] == ["0.000", "0.000", "0.000"]
    assert "semantic: not available (MEMORYHUB_EMBEDDINGS=off)" in table
    assert "hybrid: not available (MEMORYHUB_EMBEDDINGS=off)" in table
    assert "query p50 ms" in table


@pytest.mark.slow
@pytest.mark.django_db
def test_only_the_chosen_part_of_the_set_is_asked(tiny_files: tuple[Path, Path]) -> None:
    document = _json_run(tiny_files, "--set", "test")
    substring = _ranking(document, "substring")
    assert document["shipped_questions"] == 2
    assert substring["scores"]["all"]["questions"] == 2
    assert substring["scores"]["tune"] is None


@pytest.mark.slow
@pytest.mark.django_db
def test_the_throwaway_account_and_its_entries_are_gone_afterwards(tiny_files: tuple[Path, Path], owner: User) -> None:
    _json_run(tiny_files)
    assert not get_user_model().objects.filter(username__startswith=recall.BENCH_USERNAME_PREFIX).exists()
    assert MemoryEntry.objects.count() == 0


@pytest.mark.slow
@pytest.mark.skipif(
    connection.vendor != "sqlite", reason="VACUUM is SQLite's; PostgreSQL's autovacuum gives space back"
)
@pytest.mark.django_db(transaction=True)
def test_on_sqlite_the_pages_the_throwaway_account_used_are_given_back(tiny_files: tuple[Path, Path]) -> None:
    _json_run(tiny_files)
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA freelist_count")
        assert cursor.fetchone()[0] == 0


def _tree_snapshot() -> dict[str, float]:
    skipped = {".venv", "data", "__pycache__", ".git", "test-results", "staticfiles", ".pytest_cache"}
    snapshot = {}
    for path in Path(django_settings.BASE_DIR).rglob("*"):
        if path.is_file() and not skipped & set(path.relative_to(django_settings.BASE_DIR).parts):
            snapshot[str(path)] = path.stat().st_mtime
    return snapshot


@pytest.mark.slow
@pytest.mark.django_db
def test_report_writes_markdown_where_asked_and_nothing_into_the_tree_by_default(
    tiny_files: tuple[Path, Path], tmp_path: Path
) -> None:
    before = _tree_snapshot()
    _json_run(tiny_files)
    assert _tree_snapshot() == before
    report = tmp_path / "nested" / "RECALL.md"
    _json_run(tiny_files, "--report", str(report))
    text = report.read_text(encoding="utf-8")
    assert text.startswith("# Recall")
    assert f"`manage.py benchmark_recall --sizes {SIZE} --set all --report {report}`" in text
    assert "| shared_words | 3 | 1.000 1.000 1.000 |" in text
    assert _tree_snapshot() == before


@pytest.mark.slow
@pytest.mark.django_db
def test_rewriting_the_report_keeps_the_hand_written_analysis(tiny_files: tuple[Path, Path], tmp_path: Path) -> None:
    report = tmp_path / "RECALL.md"
    report.write_text(
        f"# old figures\n\n{recall_report.ANALYSIS_MARKER}\n\nWhy lexical misses paraphrases.\n", encoding="utf-8"
    )
    _json_run(tiny_files, "--report", str(report))
    text = report.read_text(encoding="utf-8")
    assert "# old figures" not in text
    assert text.rstrip().endswith(f"{recall_report.ANALYSIS_MARKER}\n\nWhy lexical misses paraphrases.")


def test_bad_sizes_are_refused_with_the_option_named() -> None:
    with pytest.raises(CommandError, match="--sizes must be whole numbers"):
        call_command("benchmark_recall", "--sizes", "100,lots", stdout=StringIO(), stderr=StringIO())


def test_filler_is_the_same_on_every_run_and_never_takes_a_labelled_key() -> None:
    first = recall.filler_entries(uid="amara", count=500)
    assert first == recall.filler_entries(uid="amara", count=500)
    assert first != recall.filler_entries(uid="kenji", count=500)
    keys = [key for key, _, _ in first]
    assert len(set(keys)) == 500
    labelled = {memory.key for memory in recall_set_load().memories}
    assert not labelled & set(keys)


@pytest.mark.slow
@pytest.mark.django_db
def test_the_shipped_sets_load_at_a_small_size_and_every_ranking_is_reported(settings: Settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "off"
    document = json.loads(_run("--json", "--sizes", "30"))
    (size,) = document["sizes"]
    assert size["users"] == 16 and size["entries"] == 16 * 30
    names = [ranking["name"] for ranking in size["rankings"]]
    assert names == ["substring", "lexical", "semantic", "hybrid"]
    assert _ranking(document, "semantic")["unavailable"] == "MEMORYHUB_EMBEDDINGS=off"
    assert _ranking(document, "lexical")["scores"]["all"]["questions"] == 144


def _measured(name: str, keys: tuple[str, ...]) -> recall.RankingResult:
    question = recall_set_load().questions[0]
    outcome = recall.Outcome(question=question, answer_keys=("editor",), keys=keys, nothing_found=None)
    return recall.RankingResult(name=name, description=name, unavailable="", outcomes=[outcome])


def test_hybrid_that_answers_exactly_as_lexical_is_reported_as_not_fusing() -> None:
    results = [_measured("lexical", ("editor", "shell")), _measured("hybrid", ("editor", "shell"))]
    recall._unless_fused(results)
    assert results[1].unavailable == recall.NOT_FUSED
    fused = [_measured("lexical", ("editor", "shell")), _measured("hybrid", ("shell", "editor"))]
    recall._unless_fused(fused)
    assert fused[1].unavailable == ""
