"""The labelled recall sets: memories about people, and the questions an agent asks about them.

`data/recall_set.json` is the shipped set (tune and test questions); `data/recall_unseen.json` is a
second, independent set (other people, other phrasing) that nothing is ever tuned on. Each
question names its uid and the ids of the memories that answer it (none for a no-answer question).

Loading checks the file as a whole and raises RecallSetError naming the first thing wrong: the
fields and their types, unique ids, unique (uid, key), answers that exist and belong to the
question's uid, and each category's rule on words (see `CATEGORY_RULES`), so a question filed
under "no_shared_words" that does share a word with its answer is refused, not measured.
"""

import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from django.db import models

DATA_DIR = Path(__file__).resolve().parent / "data"
RECALL_SET_PATH = DATA_DIR / "recall_set.json"
RECALL_UNSEEN_PATH = DATA_DIR / "recall_unseen.json"


class Category(models.TextChoices):
    SHARED_WORDS = "shared_words", "words shared"
    NO_SHARED_WORDS = "no_shared_words", "no words shared"
    PARAPHRASE = "paraphrase", "paraphrase"
    TYPO = "typo", "typo"
    NO_ANSWER = "no_answer", "no answer"


class Split(models.TextChoices):
    TUNE = "tune", "tune"
    TEST = "test", "test"
    UNSEEN = "unseen", "unseen"


CATEGORY_RULES = {
    Category.SHARED_WORDS: "holds at least one word of an answer's key or value",
    Category.NO_SHARED_WORDS: "shares no word, nor a word's stem, with any answer",
    Category.PARAPHRASE: "shares no word, nor a word's stem, with any answer",
    Category.TYPO: "differs from `intended` by a few letters in some words; `intended` shares a word with an answer",
    Category.NO_ANSWER: "has no answers",
}
# Typos are small: at most this many letters changed in each misspelt word.
TYPO_MAX_EDITS = 2
# Words too common in questions to count as shared (they say nothing about the memory).
STOPWORD_TEXT = """
    a about after all also am an and any anything are as at be been before but by can could did do does
    doing for from get had has have he her hers him his how i if in into is it its just me my no not of on
    one or our she should so than that the their them they this to too us was we were what whats when where
    which who whom why will with would you your
    """
STOPWORDS = frozenset(STOPWORD_TEXT.split())
# Two words count as one stem when one begins with the other (3 letters or more), or when they begin
# with the same STEM_MIN_PREFIX letters and differ in at most STEM_SLACK more of the shorter one's:
# "cook"/"cooking", "editor"/"editing", "music"/"musician", but not "book"/"boot" nor "data"/"date".
STEM_MIN_PREFIX = 4
STEM_SLACK = 2
WORD_PATTERN = re.compile(r"[^\W_]+")
MIN_WORD_LENGTH = 2


class RecallSetError(ValueError):
    """The recall set's file is malformed or breaks one of its rules."""


@dataclass(frozen=True)
class Memory:
    id: str
    uid: str
    key: str
    value: str
    kind: str


@dataclass(frozen=True)
class Question:
    id: str
    uid: str
    category: str
    split: str
    text: str
    answers: tuple[str, ...]
    intended: str | None = None


@dataclass(frozen=True)
class RecallSet:
    name: str
    memories: tuple[Memory, ...]
    questions: tuple[Question, ...]

    @property
    def uids(self) -> list[str]:
        return sorted({memory.uid for memory in self.memories})

    def memory(self, memory_id: str) -> Memory:
        return self._by_id[memory_id]

    def answer_keys(self, question: Question) -> tuple[str, ...]:
        """The keys (in the question's uid) of the memories that answer it."""
        return tuple(self.memory(memory_id).key for memory_id in question.answers)

    def select(self, *, splits: Iterable[str]) -> "RecallSet":
        """The same memories with only the questions of these splits."""
        wanted = set(splits)
        return RecallSet(
            name=self.name,
            memories=self.memories,
            questions=tuple(question for question in self.questions if question.split in wanted),
        )

    @cached_property
    def _by_id(self) -> dict[str, Memory]:
        return {memory.id: memory for memory in self.memories}


def fold(text: str) -> str:
    """Case and accents folded: "Zoë" -> "zoe", "São" -> "sao"."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(character for character in decomposed if not unicodedata.combining(character))


def content_words(text: str) -> set[str]:
    """The folded words of text that say something: stopwords and one-letter words left out."""
    return {word for word in WORD_PATTERN.findall(fold(text)) if len(word) >= MIN_WORD_LENGTH and word not in STOPWORDS}


def memory_words(memory: Memory) -> set[str]:
    return content_words(memory.key.replace("_", " ")) | content_words(memory.value)


def same_stem(first: str, second: str) -> bool:
    shorter, longer = sorted((first, second), key=len)
    if longer.startswith(shorter) and len(shorter) >= 3:
        return True
    common = 0
    for left, right in zip(first, second, strict=False):
        if left != right:
            break
        common += 1
    return common >= max(STEM_MIN_PREFIX, len(shorter) - STEM_SLACK)


def edit_distance(first: str, second: str) -> int:
    previous = list(range(len(second) + 1))
    for row, left in enumerate(first, 1):
        current = [row]
        for column, right in enumerate(second, 1):
            current.append(min(previous[column] + 1, current[column - 1] + 1, previous[column - 1] + (left != right)))
        previous = current
    return previous[-1]


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise RecallSetError(message)


def _string(item: dict[str, Any], field: str, where: str) -> str:
    value = item.get(field)
    if not isinstance(value, str) or not value.strip():
        raise RecallSetError(f"{where}: {field} must be a non-empty string")
    return value


def _memory(item: Any, index: int) -> Memory:  # noqa: ANN401 - decoded JSON, checked field by field
    where = f"memories[{index}]"
    _require(isinstance(item, dict), f"{where} must be an object")
    return Memory(
        id=_string(item, "id", where),
        uid=_string(item, "uid", where),
        key=_string(item, "key", where),
        value=_string(item, "value", where),
        kind=_string(item, "kind", where),
    )


def _question(item: Any, index: int) -> Question:  # noqa: ANN401 - decoded JSON, checked field by field
    where = f"questions[{index}]"
    _require(isinstance(item, dict), f"{where} must be an object")
    answers = item.get("answers")
    _require(
        isinstance(answers, list) and all(isinstance(answer, str) for answer in answers),
        f"{where}: answers must be a list of memory ids",
    )
    intended = item.get("intended")
    _require(intended is None or isinstance(intended, str), f"{where}: intended must be a string")
    category = _string(item, "category", where)
    _require(category in Category.values, f"{where}: category must be one of {', '.join(Category.values)}")
    split = _string(item, "split", where)
    _require(split in Split.values, f"{where}: split must be one of {', '.join(Split.values)}")
    return Question(
        id=_string(item, "id", where),
        uid=_string(item, "uid", where),
        category=category,
        split=split,
        text=_string(item, "text", where),
        answers=tuple(answers),
        intended=intended,
    )


def _check_words(question: Question, answers: list[Memory]) -> None:
    where = f"question {question.id} ({question.category})"
    answer_words = set().union(*(memory_words(memory) for memory in answers)) if answers else set()
    asked = content_words(question.text)
    if question.category == Category.NO_ANSWER:
        _require(not answers, f"{where} must have no answers")
        return
    _require(bool(answers), f"{where} needs at least one answer")
    if question.category == Category.SHARED_WORDS:
        _require(bool(asked & answer_words), f"{where} shares no word with its answers")
    elif question.category in (Category.NO_SHARED_WORDS, Category.PARAPHRASE):
        shared = sorted(word for word in asked for known in answer_words if same_stem(word, known))
        _require(not shared, f"{where} shares {', '.join(shared)} with its answers")
    if question.category == Category.TYPO:
        _require(question.intended is not None, f"{where} needs the question as intended")
        assert question.intended is not None
        _require(
            bool(content_words(question.intended) & answer_words), f"{where}: intended shares no word with its answers"
        )
        typed, meant = question.text.split(), question.intended.split()
        _require(len(typed) == len(meant) and typed != meant, f"{where} must misspell words of intended, word for word")
        for typed_word, meant_word in zip(typed, meant, strict=True):
            _require(
                edit_distance(typed_word, meant_word) <= TYPO_MAX_EDITS,
                f"{where}: {typed_word!r} is more than {TYPO_MAX_EDITS} letters from {meant_word!r}",
            )
    else:
        _require(question.intended is None, f"{where}: only typo questions have intended")


def recall_set_parse(document: Any) -> RecallSet:  # noqa: ANN401 - decoded JSON, checked field by field
    """A RecallSet from the decoded JSON document; RecallSetError names the first thing wrong."""
    _require(isinstance(document, dict), "the recall set must be a JSON object")
    name = _string(document, "name", "the recall set")
    items, question_items = document.get("memories"), document.get("questions")
    _require(isinstance(items, list) and bool(items), "memories must be a non-empty list")
    _require(isinstance(question_items, list) and bool(question_items), "questions must be a non-empty list")
    memories = [_memory(item, index) for index, item in enumerate(items)]
    questions = [_question(item, index) for index, item in enumerate(question_items)]
    by_id: dict[str, Memory] = {}
    identities: set[tuple[str, str]] = set()
    for memory in memories:
        _require(memory.id not in by_id, f"memory id {memory.id} is used twice")
        _require((memory.uid, memory.key) not in identities, f"uid {memory.uid} has key {memory.key} twice")
        by_id[memory.id] = memory
        identities.add((memory.uid, memory.key))
    uids = {memory.uid for memory in memories}
    question_ids: set[str] = set()
    for question in questions:
        _require(question.id not in question_ids, f"question id {question.id} is used twice")
        question_ids.add(question.id)
        _require(question.uid in uids, f"question {question.id}: uid {question.uid} has no memories")
        _require(len(set(question.answers)) == len(question.answers), f"question {question.id} repeats an answer")
        for answer in question.answers:
            _require(answer in by_id, f"question {question.id}: answer {answer} is no memory of the set")
            _require(
                by_id[answer].uid == question.uid,
                f"question {question.id}: answer {answer} is a memory of {by_id[answer].uid}, not {question.uid}",
            )
        _check_words(question, [by_id[answer] for answer in question.answers])
    return RecallSet(name=name, memories=tuple(memories), questions=tuple(questions))


def recall_set_load(path: Path = RECALL_SET_PATH) -> RecallSet:
    """Read and check a recall set file (the shipped set by default)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise RecallSetError(f"{path.name} is not valid JSON: {error}") from None
    return recall_set_parse(document)
