"""`make serve`'s server, started for real on a free port: idle connections, the access log, and
the rate limit held by every worker process (and, with Redis, by every app server) together."""

import http.client
import json
import socket
import time
from concurrent.futures import ProcessPoolExecutor

import pytest

from tests.support.hub_process import call, create_token, hub_database, running_hub

pytestmark = pytest.mark.process

IDLE_SOCKETS = 8
CLIENT_PROCESSES = 4
REQUESTS_EACH = 30
LIMIT = 40
RATE = f"{LIMIT}/hour"


def test_sockets_that_send_half_a_request_do_not_stop_a_normal_request(tmp_path):
    with hub_database(tmp_path) as database:
        token = create_token(database, "agent")
        with running_hub(database, tmp_path / "hub.log", workers=2) as hub:
            assert call(hub.port, "GET", "/api/v1/info", token)[0] == 200  # the workers are up
            idle = []
            for _ in range(IDLE_SOCKETS):
                stalled = socket.create_connection(("127.0.0.1", hub.port))
                stalled.sendall(b"GET /api/v1/info HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Tok")
                idle.append(stalled)
            try:
                connection = http.client.HTTPConnection("127.0.0.1", hub.port, timeout=1.0)
                connection.request("GET", "/api/v1/info", headers={"Authorization": f"Token {token}"})
                # A response that takes longer than 1 s raises TimeoutError here.
                assert connection.getresponse().status == 200
                connection.close()
            finally:
                for stalled in idle:
                    stalled.close()


def _chunked(port: int, method: str, path: str, token: str, parts: list[bytes]) -> tuple[int, dict]:
    """A request whose body goes in chunks (Transfer-Encoding: chunked, no Content-Length)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"Authorization": f"Token {token}", "Content-Type": "application/json", "Accept": "application/json"}
        connection.request(method, path, body=iter(parts), headers=headers, encode_chunked=True)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


def test_a_chunked_body_is_read_whole_by_every_write(tmp_path):
    with hub_database(tmp_path) as database:
        token = create_token(database, "agent")
        with running_hub(database, tmp_path / "hub.log", workers=1) as hub:
            memory = "/api/v1/users/alice/memories/editor"
            created = _chunked(hub.port, "PUT", memory, token, [b'{"value": "uses ', b'Helix"}'])
            changed = _chunked(hub.port, "PATCH", memory, token, [b'{"value": "uses Zed"}'])
            batch = _chunked(
                hub.port,
                "POST",
                "/api/v1/users/alice/memories/batch",
                token,
                [b'{"operations": [{"op": "put", "key": "shell", ', b'"value": "fish"}]}'],
            )
            stored = call(hub.port, "GET", memory, token)[2]

    assert created[0] == 201 and created[1]["value"] == "uses Helix"
    assert changed[0] == 200 and changed[1]["value"] == "uses Zed" and changed[1]["version"] == 2
    assert batch[0] == 200, batch
    assert stored["value"] == "uses Zed"


def test_the_access_log_has_each_request_without_its_query_string_and_leaves_out_healthz(tmp_path):
    with hub_database(tmp_path) as database:
        token = create_token(database, "agent")
        with running_hub(database, tmp_path / "hub.log", workers=1) as hub:
            call(hub.port, "GET", "/api/v1/users/alice/memories/?q=private-words", token)
            call(hub.port, "GET", "/healthz", token)
            call(hub.port, "GET", "/api/v1/info", token)
            log = hub.log()

    assert '"GET /api/v1/users/alice/memories/ HTTP/1.1" 200' in log
    assert '"GET /api/v1/info HTTP/1.1" 200' in log
    assert "private-words" not in log
    assert '"GET /healthz' not in log


def _requests_from_one_client(port: int, token: str) -> list[tuple[int, str | None]]:
    answers = []
    for _ in range(REQUESTS_EACH):
        status, headers, _body = call(port, "GET", "/api/v1/info", token)
        answers.append((status, headers.get("Retry-After")))
    return answers


def _hour() -> int:
    return int(time.time()) // 3600


def _concurrent_requests(ports: list[int], token: str) -> tuple[list[tuple[int, str | None]], bool]:
    """CLIENT_PROCESSES processes at once, each on fresh connections, spread over the given servers;
    also whether they all ran within one window of the limit."""
    started = _hour()
    with ProcessPoolExecutor(CLIENT_PROCESSES) as pool:
        batches = pool.map(
            _requests_from_one_client,
            [ports[number % len(ports)] for number in range(CLIENT_PROCESSES)],
            [token] * CLIENT_PROCESSES,
        )
        answers = [answer for batch in batches for answer in batch]
    return answers, started == _hour()


def _assert_the_limit_held(answers: list[tuple[int, str | None]], one_window: bool) -> None:
    statuses = [status for status, _ in answers]
    assert set(statuses) <= {200, 429}
    if one_window:
        assert statuses.count(200) == LIMIT
    else:  # the hour turned during the test: two windows' worth at most
        assert LIMIT <= statuses.count(200) <= 2 * LIMIT
    assert all(retry_after and 1 <= int(retry_after) <= 3600 for status, retry_after in answers if status == 429)


def test_the_rate_limit_holds_across_the_worker_processes_of_one_machine(tmp_path):
    with hub_database(tmp_path) as database:
        token = create_token(database, "agent")
        with running_hub(database, tmp_path / "hub.log", workers=4, env={"MEMORYHUB_RATE_LIMIT": RATE}) as hub:
            answers, one_window = _concurrent_requests([hub.port], token)

    _assert_the_limit_held(answers, one_window)


def test_with_redis_the_rate_limit_holds_across_app_servers(tmp_path, redis_url):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    with hub_database(tmp_path / "a") as database:
        token = create_token(database, "agent")
        shared = {"MEMORYHUB_RATE_LIMIT": RATE, "MEMORYHUB_CACHE_URL": redis_url}
        # The second server shares the database but not the first one's shared-memory table.
        second = {**shared, "MEMORYHUB_DATA_DIR": str(tmp_path / "b")}
        if database.sqlite_path is not None:
            second["DATABASE_URL"] = f"sqlite:///{database.sqlite_path}"
        with (
            running_hub(database, tmp_path / "a.log", workers=2, env=shared) as first_hub,
            running_hub(database, tmp_path / "b.log", workers=2, env=second) as second_hub,
        ):
            answers, one_window = _concurrent_requests([first_hub.port, second_hub.port], token)

    _assert_the_limit_held(answers, one_window)
    served = {line.split('"')[1] for line in (tmp_path / "b.log").read_text().splitlines() if '"GET' in line}
    assert served == {"GET /api/v1/info HTTP/1.1"}, "the second server answered its share"
