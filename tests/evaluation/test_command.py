"""`manage.py evaluate`: the table, the JSON, the exit codes, and Honcho graded through the real SDK."""

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from evaluation.models import BackendResult, EvaluationRun
from evaluation.scoring import grade_for, latency_points
from honcho_double import HonchoDouble
from tests.support.honcho import closed_port_url


def evaluate(*arguments: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("evaluate", *arguments, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def rows(table: str) -> dict[str, list[str]]:
    return {
        line.split()[0]: line.split()
        for line in table.splitlines()[1:]
        if line.split() and line.split()[0] in ("null", "local", "honcho")
    }


def test_it_prints_a_table_grading_local_a_and_recommending_it(db):
    out, err = evaluate("--ops", "3")
    header = out.splitlines()[0].split()
    assert header[:5] == ["backend", "available", "put", "get", "find"]
    table = rows(out)
    assert table["local"][1:5] == ["yes", "ok", "ok", "ok"]
    assert header[-3:] == ["score", "grade", "recall@5"]
    assert table["local"][-2] == "A"
    assert re.fullmatch(r"\d\.\d\d", table["local"][-1]), "local's recall@5 is shown beside its grade"
    assert table["null"][1:5] == ["yes", "ok", "FAIL", "FAIL"]
    assert "honcho" not in table
    assert "Recommendation: Best: local (" in out
    assert "evaluating null" in err and "evaluated local: A" in err


@pytest.mark.slow
def test_json_is_one_document_in_the_reference_shape_with_the_new_fields(db):
    out, _ = evaluate("--json", "--ops", "2")
    document = json.loads(out)
    assert document["recommendation"].startswith("Best: local")
    names = [result["name"] for result in document["results"]]
    assert names == ["null", "local"]
    local = document["results"][1]
    assert {"name", "ok", "cloud", "score", "grade"} <= set(local)
    assert (local["ok"], local["cloud"], local["grade"], local["ops"]) == (True, False, "A", 2)
    assert set(local["operations"]) == {"put", "get", "find"}
    assert isinstance(local["recall_at_5"], float) and document["results"][0]["recall_at_5"] == 0.0
    assert all(
        operation["ok"] and operation["p95_ms"] >= operation["p50_ms"] for operation in local["operations"].values()
    )


@pytest.mark.slow
def test_a_run_is_stored_unless_no_save_is_given(db):
    evaluate("--ops", "1")
    assert EvaluationRun.objects.count() == 1
    assert list(BackendResult.objects.values_list("name", "grade")) == [("null", "B"), ("local", "A")]
    out, _ = evaluate("--ops", "1", "--no-save")
    assert EvaluationRun.objects.count() == 1
    assert "Not stored" in out


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--backend", "redis"], "unknown backend 'redis': choose from null, local, honcho"),
        (["--backend", "honcho"], "Honcho is not configured"),
        (["--ops", "0"], "ops must be between 1 and 1000"),
    ],
)
def test_a_bad_request_or_configuration_exits_non_zero_with_a_clear_message(db, arguments: list[str], message: str):
    with pytest.raises(CommandError, match=message):
        evaluate(*arguments)
    assert EvaluationRun.objects.count() == 0


@pytest.mark.slow
def test_honcho_pointed_at_the_double_is_graded_through_real_sdk_round_trips(db, served_double: HonchoDouble):
    out, _ = evaluate("--json", "--ops", "2", "--backend", "local", "--backend", "honcho")
    honcho = json.loads(out)["results"][1]
    assert (honcho["name"], honcho["ok"], honcho["cloud"]) == ("honcho", True, True)
    assert all(operation["ok"] for operation in honcho["operations"].values())
    # every operation worked, and a cloud earns 5 for privacy: the rest is the latency tier of its medians
    assert honcho["score"] == 20 + 15 + 15 + 10 + latency_points(honcho["latency_ms"]) + 5
    assert honcho["grade"] == grade_for(honcho["score"])
    assert "WARNING: cloud" not in json.loads(out)["recommendation"], "local scores higher and is recommended"
    assert served_double.calls_to("POST", "/messages") and served_double.calls_to("DELETE", "")
    assert served_double.sessions("memoryhub") == []  # the probe's sessions are gone


def test_honcho_refusing_the_key_is_graded_f_with_the_reason_after_one_call(db, settings):
    double = HonchoDouble(api_key="the-right-key")
    with double.running() as base_url:
        settings.HONCHO_URL, settings.HONCHO_API_KEY = base_url, "a-wrong-key"
        out, _ = evaluate("--backend", "honcho")
    assert rows(out)["honcho"][1:] == ["no", "-", "-", "-", "-", "-", "-", "cloud", "0", "F", "-"]
    assert "refused the API key (401)" in out
    assert "Traceback" not in out
    assert len(double.calls) == 1


@pytest.mark.slow
def test_honcho_unreachable_is_graded_f_with_the_reason(db, settings):
    settings.HONCHO_URL = closed_port_url()
    out, _ = evaluate("--backend", "honcho", "--backend", "local")
    assert rows(out)["honcho"][-2:] == ["F", "-"]
    assert f"honcho: unavailable: could not reach Honcho at {settings.HONCHO_URL}" in out
    assert "Recommendation: Best: local" in out
