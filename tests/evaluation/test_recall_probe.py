"""Each backend's recall@5 on the recall probe: measured beside the rubric, stored, shown, never scored."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from evaluation.models import BackendResult
from evaluation.recall_set import Question, RecallSet, Split, recall_set_load
from evaluation.scoring import score_backend
from evaluation.services import (
    RECALL_AT,
    RECALL_PROBE_PEOPLE,
    evaluation_run,
    measure_recall,
    new_probe_uid,
    recall_probe,
)
from honcho_double import Fault, HonchoDouble
from honcho_double.server import IN_PROCESS_BASE_URL
from memories import accounts, selectors, services
from memories.backends import make_backend
from memories.embeddings.store import embeddings_process_pending
from memories.models import PROBE_USERNAME, MemoryEntry, MemoryEvent
from tests.support.honcho import closed_port_url


@pytest.fixture
def in_process_honcho(settings) -> HonchoDouble:
    settings.HONCHO_URL = IN_PROCESS_BASE_URL
    return HonchoDouble()


def honcho_on(double: HonchoDouble) -> dict:
    return {"honcho": {"http_client": double.http_client()}}


def probe_recall(owner, probe: RecallSet, match: str = selectors.MATCH_RANKED) -> float:
    """recall@5 computed apart from the evaluation: the probe's people stored for owner through the
    services (and embedded, as the worker does), each question asked of the selector: the ranked
    search ?q= answers (what the local backend's find is), or the reference's substring scan."""
    for memory in probe.memories:
        services.entry_put(owner=owner, uid=memory.uid, key=memory.key, value=memory.value, kind=memory.kind)
    while embeddings_process_pending():
        pass
    answered = 0
    for question in probe.questions:
        found = selectors.entry_find(owner=owner, uid=question.uid, query_text=question.text, match=match)
        keys = [entry.key for entry in found[:RECALL_AT]]
        answered += any(key in keys for key in probe.answer_keys(question))
    return answered / len(probe.questions)


def keys_as_questions(probe: RecallSet) -> RecallSet:
    """The probe's memories, asked for by their answers' keys: questions a substring match can answer."""
    return RecallSet(
        name="asked by key",
        memories=probe.memories,
        questions=tuple(
            Question(
                id=question.id,
                uid=question.uid,
                category=question.category,
                split=question.split,
                text=probe.answer_keys(question)[0].split(".", 1)[-1],
                answers=question.answers,
            )
            for question in probe.questions
        ),
    )


def test_the_probe_is_two_peoples_memories_and_their_answerable_test_questions():
    probe = recall_probe()
    shipped = recall_set_load()
    assert {memory.uid for memory in probe.memories} == set(RECALL_PROBE_PEOPLE)
    assert len(probe.memories) == sum(memory.uid in RECALL_PROBE_PEOPLE for memory in shipped.memories) == 52
    assert len(probe.questions) == 16
    assert all(question.split == Split.TEST and question.answers for question in probe.questions)


@pytest.mark.slow
@pytest.mark.parametrize("embeddings", ["local", "off"])
def test_local_recall_is_what_the_hubs_search_finds_on_the_same_probe(owner, settings, embeddings):
    settings.MEMORYHUB_EMBEDDINGS = embeddings
    (local,) = evaluation_run(backend_names=["local"], ops=1).scores
    assert local.recall_at_5 == probe_recall(owner, recall_probe())


@pytest.mark.slow
def test_local_recall_is_a_real_figure_where_the_references_scan_finds_nothing(owner, settings):
    settings.MEMORYHUB_EMBEDDINGS = "local"
    (hybrid,) = evaluation_run(backend_names=["local"], ops=1).scores
    settings.MEMORYHUB_EMBEDDINGS = "off"
    (words,) = evaluation_run(backend_names=["local"], ops=1).scores
    substring = probe_recall(owner, recall_probe(), match=selectors.MATCH_SUBSTRING)
    assert substring == 0.0  # the probe's questions are sentences: no memory holds one whole
    assert hybrid.recall_at_5 is not None and words.recall_at_5 is not None
    assert hybrid.recall_at_5 > words.recall_at_5 > substring


@pytest.mark.slow
def test_local_recall_rises_when_the_questions_hold_the_answers_words(owner, monkeypatch):
    asked_by_key = keys_as_questions(recall_probe())
    monkeypatch.setattr("evaluation.services.recall_probe", lambda: asked_by_key)
    (local,) = evaluation_run(backend_names=["local"], ops=1).scores
    expected = probe_recall(owner, asked_by_key)
    assert local.recall_at_5 == expected and expected > 0.5


def test_null_finds_nothing_and_gets_zero(db):
    (null,) = evaluation_run(backend_names=["null"], ops=1).scores
    assert null.recall_at_5 == 0.0


@pytest.mark.slow
def test_the_recall_probe_leaves_no_probe_data_and_no_history(db):
    evaluation_run(backend_names=["local", "null"], ops=2)
    probe = accounts.probe_account()
    assert probe.get_username() == PROBE_USERNAME
    assert not MemoryEntry.objects.filter(owner=probe).exists()
    assert not MemoryEvent.objects.filter(owner=probe).exists()


def test_honcho_through_the_stand_in_gets_a_figure_and_its_probe_sessions_go(db, in_process_honcho):
    report = evaluation_run(backend_names=["honcho"], ops=2, backend_options=honcho_on(in_process_honcho))
    (honcho,) = report.scores
    assert honcho.available and isinstance(honcho.recall_at_5, float) and 0.0 <= honcho.recall_at_5 <= 1.0
    assert report.run.results.get().recall_at_5 == honcho.recall_at_5
    assert in_process_honcho.sessions("memoryhub") == []


def test_honcho_whose_calls_fail_gets_no_figure(db, in_process_honcho):
    backend = make_backend(
        "honcho", owner=accounts.probe_account(), max_retries=0, **honcho_on(in_process_honcho)["honcho"]
    )
    in_process_honcho.faults.fail(1.0, kinds=(Fault.SERVER_ERROR,))
    try:
        assert measure_recall(backend, probe_uid=new_probe_uid()) is None
    finally:
        backend.close()


def test_an_unavailable_backend_gets_no_figure_shown_as_a_dash(db, settings):
    settings.HONCHO_URL, settings.HONCHO_TIMEOUT = closed_port_url(), 1.0
    out = StringIO()
    call_command("evaluate", "--backend", "honcho", "--ops", "1", stdout=out, stderr=StringIO())
    honcho_row = next(line.split() for line in out.getvalue().splitlines() if line.startswith("honcho"))
    assert honcho_row[-3:] == ["0", "F", "-"]
    assert BackendResult.objects.get().recall_at_5 is None


@pytest.mark.slow
def test_the_rubric_points_are_the_references_whatever_the_recall(db, monkeypatch):
    asked_by_key = keys_as_questions(recall_probe())
    monkeypatch.setattr("evaluation.services.recall_probe", lambda: asked_by_key)
    for score in evaluation_run(backend_names=["null", "local"], ops=2).scores:
        graded_alone = score_backend(name=score.name, cloud=score.cloud, reason="", operations=score.operations)
        assert (score.score, score.grade) == (graded_alone.score, graded_alone.grade)
    null, local = evaluation_run(backend_names=["null", "local"], ops=2).scores
    assert local.recall_at_5 is not None
    assert null.recall_at_5 == 0.0 < local.recall_at_5


def test_json_the_api_and_the_dashboard_carry_the_figure(owner, owner_api, owner_client):
    out = StringIO()
    call_command("evaluate", "--json", "--ops", "1", stdout=out, stderr=StringIO())
    document = json.loads(out.getvalue())
    stored = {result.name: result.recall_at_5 for result in BackendResult.objects.all()}
    assert {result["name"]: result["recall_at_5"] for result in document["results"]} == stored
    assert stored["null"] == 0.0 and stored["local"] is not None

    api_results = owner_api.get("/api/v1/evaluations/").json()["results"][0]["results"]
    assert {result["name"]: result["recall_at_5"] for result in api_results} == stored

    page = owner_client.get("/evaluations/").content.decode()
    assert "Recall@5" in page and f'data-label="Recall@5">{stored["local"]:.2f}</td>' in page
