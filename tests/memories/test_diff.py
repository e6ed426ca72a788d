"""The history's diff: what was removed and added, and nothing lost either way."""

from hypothesis import given
from hypothesis import strategies as st

from memories.diff import DIFF_MAX_TOKENS, Run, text_diff


def _side(runs: list[Run], keep: str) -> str:
    return "".join(run.text for run in runs if run.operation in ("same", keep))


def test_a_changed_word_is_removed_and_its_replacement_added() -> None:
    runs = text_diff("prefers Python, writes Rust", "prefers Python, writes Go")

    assert [(run.operation, run.text) for run in runs if run.operation != "same"] == [
        ("removed", "Rust"),
        ("added", "Go"),
    ]


def test_an_appended_clause_is_the_only_addition() -> None:
    runs = text_diff("uses vim", "uses vim on weekends")

    assert [run for run in runs if run.operation != "same"] == [Run("added", " on weekends")]


@given(before=st.text(max_size=80), after=st.text(max_size=80))
def test_the_runs_give_back_both_texts_exactly(before: str, after: str) -> None:
    runs = text_diff(before, after)

    assert _side(runs, "removed") == before
    assert _side(runs, "added") == after


def test_very_long_texts_show_the_whole_old_value_removed_and_the_new_added() -> None:
    before, after = "word " * DIFF_MAX_TOKENS, "other " * DIFF_MAX_TOKENS

    assert text_diff(before, after) == [Run("removed", before), Run("added", after)]
