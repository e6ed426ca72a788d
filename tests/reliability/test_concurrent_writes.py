"""Eight clients hammer 50 shared keys through a multi-process hub: nothing is lost, nothing fails."""

import random
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest

from tests.support.figures import record_figures
from tests.support.hub_process import call, create_token, history_consistency_problems, hub_database, running_hub

pytestmark = [pytest.mark.process, pytest.mark.slow]

CLIENTS = 8
WRITES_PER_CLIENT = 500
KEYS = 50
WORKERS = 4
# Every fifth write of a client is conditional on the version it last saw for that key.
CONDITIONAL_EVERY = 5


@dataclass
class ClientReport:
    acknowledged: list[tuple[str, int, str]] = field(default_factory=list)  # (key, version, value)
    refused_as_stale: int = 0
    conditional_sent: int = 0
    unexpected: list[tuple[int, object]] = field(default_factory=list)


def _client(port: int, token: str, number: int) -> ClientReport:
    rng = random.Random(number)
    report = ClientReport()
    last_seen: dict[str, int] = {}
    for write in range(WRITES_PER_CLIENT):
        key = f"key-{rng.randrange(KEYS)}"
        value = f"client {number} write {write}"
        headers = {}
        if write % CONDITIONAL_EVERY == CONDITIONAL_EVERY - 1 and key in last_seen:
            headers["If-Match"] = f'"{last_seen[key]}"'
            report.conditional_sent += 1
        status, _, body = call(port, "PUT", f"/api/v1/users/shared/memories/{key}", token, {"value": value}, headers)
        if status in (200, 201):
            report.acknowledged.append((key, body["version"], value))
            last_seen[key] = body["version"]
        elif status == 412 and headers:
            report.refused_as_stale += 1
        else:
            report.unexpected.append((status, body))
    return report


def test_concurrent_writers_on_shared_keys_lose_no_write_and_get_no_server_error(tmp_path):
    with hub_database(tmp_path) as database:
        token = create_token(database, "loader")
        with running_hub(database, tmp_path / "hub.log", workers=WORKERS) as hub:
            with ThreadPoolExecutor(CLIENTS) as pool:
                reports = list(pool.map(lambda number: _client(hub.port, token, number), range(CLIENTS)))
            acknowledged_by_key: dict[str, list[tuple[int, str]]] = defaultdict(list)
            for report in reports:
                for key, version, value in report.acknowledged:
                    acknowledged_by_key[key].append((version, value))
            final = {}
            histories = {}
            for key in acknowledged_by_key:
                _, headers, entry = call(hub.port, "GET", f"/api/v1/users/shared/memories/{key}", token)
                final[key] = (entry["version"], headers["ETag"], entry["value"])
                _, _, history = call(
                    hub.port, "GET", f"/api/v1/users/shared/memories/{key}/history?page_size=500", token
                )
                histories[key] = history
        server_log = hub.log()

        assert [problem for report in reports for problem in report.unexpected] == []
        assert "database is locked" not in server_log
        assert "Traceback" not in server_log
        for key, acknowledged in acknowledged_by_key.items():
            version, etag, value = final[key]
            # Each effective write got its own version: 1, 2, ... N, and N is the entry's version.
            assert sorted(v for v, _ in acknowledged) == list(range(1, len(acknowledged) + 1))
            assert version == len(acknowledged)
            assert etag == f'"{version}"'
            assert value == dict(acknowledged)[version]
            # The history holds every acknowledged write, at the version the writer was told.
            assert histories[key]["count"] == len(acknowledged)
            assert {(event["version"], event["value_after"]) for event in histories[key]["results"]} == set(
                acknowledged
            )
        assert history_consistency_problems(database) == []
        lost = sum(
            1
            for key, acknowledged in acknowledged_by_key.items()
            for version, value in acknowledged
            if {"version": version, "value_after": value}
            not in [{"version": e["version"], "value_after": e["value_after"]} for e in histories[key]["results"]]
        )
        record_figures(
            "concurrent writes",
            database.engine,
            clients=CLIENTS,
            workers=WORKERS,
            keys=len(acknowledged_by_key),
            requests=CLIENTS * WRITES_PER_CLIENT + 2 * len(acknowledged_by_key),
            writes_acknowledged=sum(len(report.acknowledged) for report in reports),
            conditional_writes=sum(report.conditional_sent for report in reports),
            refused_as_stale=sum(report.refused_as_stale for report in reports),
            server_errors=0,
            lost_writes=lost,
        )
