"""The labelled recall sets load, hold what the recall benchmark needs, and refuse a broken file."""

import copy
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evaluation.recall_set import (
    RECALL_SET_PATH,
    RECALL_UNSEEN_PATH,
    Category,
    RecallSetError,
    Split,
    fold,
    recall_set_load,
    recall_set_parse,
)
from memories.validation import check_key, check_kind, check_uid, check_value


@pytest.fixture(scope="module")
def shipped_document() -> dict[str, Any]:
    return json.loads(RECALL_SET_PATH.read_text(encoding="utf-8"))


def test_the_shipped_set_holds_enough_people_memories_and_questions() -> None:
    recall_set = recall_set_load()
    assert len(recall_set.memories) >= 300
    assert len(recall_set.uids) >= 10
    assert len(recall_set.questions) >= 150


def test_every_category_is_split_about_evenly_between_tune_and_test() -> None:
    counts = Counter((question.category, question.split) for question in recall_set_load().questions)
    for category in Category.values:
        tune, test = counts[(category, Split.TUNE)], counts[(category, Split.TEST)]
        assert tune >= 5 and test >= 5, category
        assert abs(tune - test) <= 1, (category, tune, test)
    assert not any(split == Split.UNSEEN for _, split in counts)


def test_every_answer_is_a_memory_of_the_question_s_own_uid() -> None:
    recall_set = recall_set_load()
    for question in recall_set.questions:
        for answer in question.answers:
            assert recall_set.memory(answer).uid == question.uid
        assert bool(question.answers) == (question.category != Category.NO_ANSWER)


def test_every_memory_is_one_the_hub_accepts() -> None:
    for path in (RECALL_SET_PATH, RECALL_UNSEEN_PATH):
        for memory in recall_set_load(path).memories:
            check_uid(memory.uid), check_key(memory.key), check_value(memory.value), check_kind(memory.kind)


def test_people_share_topics_so_that_other_uids_hold_distractors() -> None:
    recall_set = recall_set_load()
    uids_per_key = Counter(memory.key for memory in recall_set.memories)
    for key in ("editor", "diet", "timezone", "birthday", "music", "car"):
        assert uids_per_key[key] >= 3, key
    # The same question asked of different people has different answers (or none).
    by_text: dict[str, set[str]] = {}
    for question in recall_set.questions:
        by_text.setdefault(question.text, set()).add(question.uid)
    assert any(len(uids) >= 2 for uids in by_text.values())


def test_values_hold_accents_and_other_languages() -> None:
    values = [memory.value for memory in recall_set_load().memories]
    assert any("São Paulo" in value for value in values)
    assert any("é" in value for value in values)
    assert sum(1 for value in values if any(ord(character) > 0x2FFF for character in value)) >= 1  # CJK


def test_the_unseen_set_is_independent_of_the_shipped_one() -> None:
    shipped, unseen = recall_set_load(), recall_set_load(RECALL_UNSEEN_PATH)
    assert len(unseen.memories) >= 40 and len(unseen.questions) >= 40
    assert not set(shipped.uids) & set(unseen.uids)
    assert not {q.text for q in shipped.questions} & {q.text for q in unseen.questions}
    assert {question.split for question in unseen.questions} == {Split.UNSEEN}
    assert {question.category for question in unseen.questions} == set(Category.values)


def test_folding_drops_case_and_accents() -> None:
    assert fold("Zoë LEFÈVRE à São Paulo") == "zoe lefevre a sao paulo"


def _broken(document: dict[str, Any], question_id: str, **changes: Any) -> dict[str, Any]:
    broken = copy.deepcopy(document)
    for question in broken["questions"]:
        if question["id"] == question_id:
            question.update(changes)
    return broken


def test_it_refuses_an_answer_that_belongs_to_another_uid(shipped_document: dict[str, Any]) -> None:
    # "which editor does she use" of Amara, answered with Zoë's allergy.
    broken = _broken(shipped_document, "amara.q01", answers=["zoe.allergy"])
    with pytest.raises(RecallSetError, match=re.escape("zoe.allergy is a memory of discord:318274, not amara")):
        recall_set_parse(broken)


def test_it_refuses_an_answer_that_is_no_memory(shipped_document: dict[str, Any]) -> None:
    with pytest.raises(RecallSetError, match=re.escape("amara.pets is no memory")):
        recall_set_parse(_broken(shipped_document, "amara.q01", answers=["amara.pets"]))


def test_it_refuses_a_no_shared_words_question_that_shares_a_word(shipped_document: dict[str, Any]) -> None:
    broken = _broken(shipped_document, "amara.q05", text="what is her diet")
    with pytest.raises(RecallSetError, match=re.escape("amara.q05 (no_shared_words) shares diet")):
        recall_set_parse(broken)


def test_it_refuses_a_shared_words_question_that_shares_nothing(shipped_document: dict[str, Any]) -> None:
    with pytest.raises(RecallSetError, match="shares no word"):
        recall_set_parse(_broken(shipped_document, "amara.q01", text="what does she write code in"))


def test_it_refuses_a_typo_far_from_what_was_meant(shipped_document: dict[str, Any]) -> None:
    typo = next(q for q in shipped_document["questions"] if q["category"] == Category.TYPO)
    with pytest.raises(RecallSetError, match="more than 2 letters"):
        recall_set_parse(_broken(shipped_document, typo["id"], text=" ".join(["zzzzzz"] * len(typo["text"].split()))))


def test_it_refuses_an_unknown_category_and_a_key_used_twice(shipped_document: dict[str, Any]) -> None:
    with pytest.raises(RecallSetError, match="category must be one of"):
        recall_set_parse(_broken(shipped_document, "amara.q01", category="easy"))
    doubled = copy.deepcopy(shipped_document)
    doubled["memories"].append({**doubled["memories"][0], "id": "amara.again"})
    with pytest.raises(RecallSetError, match="uid amara has key full_name twice"):
        recall_set_parse(doubled)


def test_it_says_when_the_file_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "set.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(RecallSetError, match=re.escape("set.json is not valid JSON")):
        recall_set_load(path)
