"""The Honcho double answers as the real server did, call for call, and misbehaves on request."""

import json
from pathlib import Path
from typing import Any

import pytest

from honcho_double import Fault, HonchoDouble
from honcho_double.api import ROUTES, matches

DOUBLE_DIR = Path(__file__).resolve().parents[3] / "honcho_double"


def _without_generated_fields(value: Any) -> Any:
    """Ids and times the server makes up differ from run to run; everything else must match."""
    if isinstance(value, dict):
        generated = {"created_at"} | ({"id"} if "token_count" in value else set())
        return {name: _without_generated_fields(item) for name, item in value.items() if name not in generated}
    if isinstance(value, list):
        return [_without_generated_fields(item) for item in value]
    return value


def test_it_replays_the_real_servers_wire_log_with_the_same_statuses_and_bodies():
    double = HonchoDouble()
    for line in (DOUBLE_DIR / "wire_log.jsonl").read_text().splitlines():
        recorded = json.loads(line)
        path, _, query = recorded["path"].partition("?")
        parameters = dict(part.split("=") for part in query.split("&") if part)
        reply, _ = double.answer(recorded["method"], path, parameters, recorded["body"], None)
        assert (recorded["method"], path, reply.status) == (recorded["method"], path, recorded["status"])
        assert _without_generated_fields(reply.body) == _without_generated_fields(recorded["response"])


def test_every_route_it_answers_is_in_the_real_servers_openapi_document():
    document = json.loads((DOUBLE_DIR / "openapi.json").read_text())
    for method, pattern, _ in ROUTES:
        templated = [path for path, operations in document["paths"].items() if method.lower() in operations]
        assert any(pattern.match(path.replace("{", "").replace("}", "")) for path in templated), pattern.pattern


def test_filters_combine_containment_icontains_and_or_not():
    record = {"id": "s1", "metadata": {"mh_uid": "alice", "mh_key": "Editor", "nested": {"a": 1}}}
    assert matches(record, {"metadata": {"mh_uid": "alice", "nested": {"a": 1}}})
    assert matches(
        record,
        {
            "AND": [
                {"metadata": {"mh_uid": "alice"}},
                {"OR": [{"metadata": {"mh_key": {"icontains": "EDIT"}}}, {"id": "zz"}]},
            ]
        },
    )
    assert not matches(record, {"metadata": {"mh_uid": "bob"}})
    assert not matches(record, {"NOT": [{"id": "s1"}]})
    assert matches(record, {"metadata": {"mh_version": {"in": [None]}}})


def test_pages_have_the_servers_shape_and_bounds():
    double = HonchoDouble()
    double.answer("POST", "/v3/workspaces", {}, {"id": "w"}, None)
    for number in range(3):
        double.answer("POST", "/v3/workspaces/w/sessions", {}, {"id": f"s{number}"}, None)
    reply, _ = double.answer(
        "POST", "/v3/workspaces/w/sessions/list", {"page": "2", "size": "2", "reverse": "true"}, None, None
    )
    assert isinstance(reply.body, dict)
    assert (reply.status, [item["id"] for item in reply.body["items"]]) == (200, ["s0"])
    assert {name: reply.body[name] for name in ("total", "page", "size", "pages")} == {
        "total": 3,
        "page": 2,
        "size": 2,
        "pages": 2,
    }
    too_big, _ = double.answer("POST", "/v3/workspaces/w/sessions/list", {"size": "101"}, None, None)
    assert too_big.status == 422


def test_it_refuses_what_honcho_refuses():
    double = HonchoDouble()
    double.answer("POST", "/v3/workspaces", {}, {"id": "w"}, None)
    bad_id, _ = double.answer("POST", "/v3/workspaces/w/peers", {}, {"id": "not allowed:"}, None)
    too_deep, _ = double.answer(
        "POST",
        "/v3/workspaces/w/sessions",
        {},
        {"id": "s", "metadata": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}},
        None,
    )
    assert (bad_id.status, too_deep.status) == (422, 422)


def test_a_deleted_session_answers_404_until_honcho_purges_it():
    double = HonchoDouble()
    double.answer("POST", "/v3/workspaces", {}, {"id": "w"}, None)
    double.answer("POST", "/v3/workspaces/w/sessions", {}, {"id": "s"}, None)
    deleted, _ = double.answer("DELETE", "/v3/workspaces/w/sessions/s", {}, None, None)
    again, _ = double.answer("POST", "/v3/workspaces/w/sessions", {}, {"id": "s"}, None)
    assert (deleted.status, again.status) == (202, 404)
    assert double.purge() == 1
    recreated, _ = double.answer("POST", "/v3/workspaces/w/sessions", {}, {"id": "s"}, None)
    assert recreated.status == 201


def test_a_failure_rate_fails_about_that_share_of_calls_and_repeats_with_its_seed():
    def failures(seed: int) -> list[int]:
        double = HonchoDouble()
        double.faults.fail(0.3, kinds=(Fault.SERVER_ERROR,), seed=seed)
        return [double.answer("GET", "/health", {}, None, None)[0].status for _ in range(1000)]

    statuses = failures(7)
    assert 200 < statuses.count(500) < 400
    assert statuses == failures(7)


def test_a_dropped_connection_still_applies_the_write():
    double = HonchoDouble()
    double.faults.fail_next.append(Fault.DROPPED_CONNECTION)
    reply, fault = double.answer("POST", "/v3/workspaces", {}, {"id": "w"}, None)
    assert (reply, fault) == (None, Fault.DROPPED_CONNECTION)
    assert "w" in double.state.workspaces


@pytest.mark.parametrize(("switch", "status"), [("unauthorized", 401), ("unreachable", 0)])
def test_it_can_refuse_everything_until_reset(switch: str, status: int):
    double = HonchoDouble()
    setattr(double.faults, switch, True)
    reply, _ = double.answer("GET", "/health", {}, None, None)
    assert (reply.status if reply else 0) == status
    double.faults.reset()
    assert double.answer("GET", "/health", {}, None, None)[0].status == 200


def test_its_command_line_refuses_a_rate_outside_0_to_1(capsys):
    from honcho_double.__main__ import main

    with pytest.raises(SystemExit) as exit_info:
        main(["--fail-rate", "1.5", "--port", "0"])
    assert exit_info.value.code == 2
    assert "--fail-rate must be between 0 and 1" in capsys.readouterr().err
