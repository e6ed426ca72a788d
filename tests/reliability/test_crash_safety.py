"""kill -9 the hub in the middle of writes: after a restart nothing acknowledged is missing,
nothing is half-written, the database passes its own check and the history agrees with the entries."""

import http.client
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.figures import record_figures
from tests.support.hub_process import (
    call,
    create_token,
    history_consistency_problems,
    hub_database,
    integrity_problems,
    running_hub,
)

pytestmark = [pytest.mark.process, pytest.mark.slow]

CLIENTS = 6
KEYS = 20
KILL_AFTER_ACKNOWLEDGED = 300
WRITES_BEFORE_GIVING_UP = 2000
META = {"source": "crash test", "tags": ["a", "b"], "nested": {"depth": [1, 2, {"three": 3}]}}


def _writer(port: int, token: str, number: int, acknowledged: list, enough: threading.Event) -> int:
    """Write until the hub dies; returns how many requests went unanswered (0 or 1)."""
    try:
        return _write_until_cut_off(port, token, number, acknowledged, enough)
    finally:
        # However this writer ends, the test must not wait for it any longer.
        enough.set()


def _write_until_cut_off(port: int, token: str, number: int, acknowledged: list, enough: threading.Event) -> int:
    for write in range(WRITES_BEFORE_GIVING_UP):
        key = f"key-{(number * 7 + write) % KEYS}"
        value = f"client {number} write {write} " + "x" * (write % 300)
        operation = write % 10
        try:
            if operation == 9:
                status, _, body = call(port, "DELETE", f"/api/v1/users/crash/memories/{key}", token)
            else:
                status, _, body = call(
                    port,
                    "PUT",
                    f"/api/v1/users/crash/memories/{key}",
                    token,
                    {"value": value, "kind": "fact", "meta": META},
                )
        except (OSError, http.client.HTTPException):
            return 1
        if status in (200, 201):
            acknowledged.append((key, body["version"], value))
        if len(acknowledged) >= KILL_AFTER_ACKNOWLEDGED:
            enough.set()
    return 0


def test_a_hub_killed_mid_write_restarts_with_every_acknowledged_write_and_a_consistent_history(tmp_path):
    with hub_database(tmp_path) as database:
        token = create_token(database, "crasher")
        acknowledged: list[tuple[str, int, str]] = []
        enough = threading.Event()
        with running_hub(database, tmp_path / "hub.log", workers=3) as hub:
            with ThreadPoolExecutor(CLIENTS) as pool:
                futures = [
                    pool.submit(_writer, hub.port, token, number, acknowledged, enough) for number in range(CLIENTS)
                ]
                enough.wait(timeout=300)
                hub.kill_hard()
                cut_off = sum(future.result() for future in futures)
            assert hub.process.returncode is not None
        assert len(acknowledged) >= KILL_AFTER_ACKNOWLEDGED, "the hub took writes before it was killed"

        assert integrity_problems(database) == []
        assert history_consistency_problems(database) == []
        stored = set(
            database.rows("SELECT key, version, value_after FROM memories_memoryevent WHERE action <> 'delete'")
        )
        missing = [write for write in acknowledged if write not in stored]
        assert missing == []

        with running_hub(database, tmp_path / "hub-restarted.log", workers=2) as restarted:
            status, _, body = call(
                restarted.port, "PUT", "/api/v1/users/crash/memories/after", token, {"value": "alive"}
            )
            assert (status, body["value"]) == (201, "alive")
            status, _, listing = call(restarted.port, "GET", "/api/v1/users/crash/memories?page_size=100", token)
            assert status == 200
            for entry in listing["results"]:
                assert entry["key"] == "after" or entry["meta"] == META
        assert "Traceback" not in restarted.log()
        record_figures(
            "crash safety",
            database.engine,
            clients=CLIENTS,
            writes_acknowledged_before_kill=len(acknowledged),
            requests_cut_off_by_kill=cut_off,
            committed_but_unanswered=len(stored) - len(acknowledged),
            faults_injected="kill -9 of the gunicorn master and its 3 workers",
            lost_writes=len(missing),
            integrity_problems=0,
        )
