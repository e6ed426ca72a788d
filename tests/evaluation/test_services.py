"""Running an evaluation: probe data kept apart and removed, failures graded, runs stored."""

import pytest
from django.contrib.auth import get_user_model

from evaluation.services import EvaluationError, evaluation_run, recall_probe
from honcho_double import Fault, HonchoDouble
from honcho_double.server import IN_PROCESS_BASE_URL
from memories import services
from memories.models import PROBE_UID, PROBE_USERNAME, MemoryEntry, MemoryEvent


def honcho_on(double: HonchoDouble) -> dict:
    return {"honcho": {"http_client": double.http_client()}}


@pytest.fixture
def in_process_honcho(settings) -> HonchoDouble:
    settings.HONCHO_URL = IN_PROCESS_BASE_URL
    return HonchoDouble()


@pytest.mark.slow
def test_probe_data_is_gone_afterwards_and_real_entries_are_untouched(owner):
    services.entry_put(owner=owner, uid=PROBE_UID, key="probe-0000", value="a real memory that looks like a probe")
    evaluation_run(backend_names=["local"], ops=3)
    probe = get_user_model().objects.get(username=PROBE_USERNAME)
    assert not MemoryEntry.objects.filter(owner=probe).exists()
    assert not MemoryEvent.objects.filter(owner=probe).exists()
    assert MemoryEntry.objects.get(owner=owner).value == "a real memory that looks like a probe"
    assert probe.is_active is False and not probe.has_usable_password()


@pytest.mark.slow
def test_a_run_leaves_another_runs_probe_data_alone_and_grades_as_if_alone(db):
    from memories.accounts import probe_account

    probe = probe_account()
    other_run_uid = f"{PROBE_UID}0ther0un"
    services.entry_put(owner=probe, uid=other_run_uid, key="probe-0000", value="another run's probe value")

    report = evaluation_run(backend_names=["local"], ops=3)

    # every operation found its own data (the points for speed depend on the machine)
    assert report.scores[0].grade == "A" and all(result.ok for result in report.scores[0].operations.values())
    assert set(MemoryEntry.objects.filter(owner=probe).values_list("uid", flat=True)) == {other_run_uid}


def test_honcho_probe_sessions_are_deleted_afterwards(db, in_process_honcho: HonchoDouble):
    report = evaluation_run(backend_names=["honcho"], ops=3, backend_options=honcho_on(in_process_honcho))
    assert report.scores[0].available is True
    assert in_process_honcho.sessions("memoryhub") == []
    # the rubric's 3 probe entries, then the recall probe's memories
    assert len(in_process_honcho.calls_to("DELETE", "")) == 3 + len(recall_probe().memories)


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        (Fault.UNREACHABLE, "could not reach Honcho"),
        (Fault.UNAUTHORIZED, "refused the API key (401)"),
        (Fault.TIMEOUT, "did not answer within 2 s"),
    ],
)
def test_honcho_that_cannot_be_used_is_graded_f_with_the_reason_after_one_call(db, in_process_honcho, fault, reason):
    in_process_honcho.faults.fail(1.0, kinds=(fault,))
    (score,) = evaluation_run(backend_names=["honcho"], ops=5, backend_options=honcho_on(in_process_honcho)).scores
    assert (score.available, score.score, score.grade) == (False, 0, "F")
    assert reason in score.reason
    assert len(in_process_honcho.calls) == 1


def test_an_operation_that_fails_stops_repeating_and_says_why(db, in_process_honcho: HonchoDouble):
    in_process_honcho.faults.fail_next.extend([None, None, None, None, None, None, None, Fault.SERVER_ERROR])
    (score,) = evaluation_run(backend_names=["honcho"], ops=5, backend_options=honcho_on(in_process_honcho)).scores
    put = score.operations["put"]
    assert (put.ok, len(put.latencies_ms)) == (False, 2)
    assert "failed (500)" in put.error
    assert score.score < 100


def test_a_run_is_stored_with_one_result_per_backend_in_order(owner):
    report = evaluation_run(backend_names=["local", "null"], ops=2, requested_by=owner)
    run = report.run
    results = list(run.results.all())
    assert [result.name for result in results] == ["local", "null"]
    assert (run.ops, run.requested_by, run.recommendation) == (2, owner, report.recommendation)
    local = results[0]
    assert (local.available, local.put_ok, local.get_ok, local.find_ok, local.grade) == (True, True, True, True, "A")
    assert local.put_p95_ms >= local.put_p50_ms > 0
    assert results[1].errors == {
        "get": "get did not return what put stored",
        "find": "find did not return the entry holding the text",
    }


def test_an_active_account_holding_the_probe_name_stops_the_run(db):
    get_user_model().objects.create_user(username=PROBE_USERNAME, password="a-real-person-1")
    with pytest.raises(EvaluationError, match="reserved for evaluation probes"):
        evaluation_run(backend_names=["local"], ops=1)
