"""Retries against the hub's real rate limit (a server with MEMORYHUB_RATE_LIMIT=5/second), and the
retry policy's rules for what the hub cannot be made to answer on demand (503, lost connections)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from live_hub import Hub
from memoryhub_client import (
    AsyncMemoryHub,
    BatchOperation,
    Entry,
    HubConnectionError,
    MemoryHub,
    NotFound,
    RateLimited,
    _calls,
    _core,
)

# Far more than the limit of 5 a second: the burst meets a 429 however slow the machine is.
BURST = 40


class Recorder:
    """What went over the wire: each answer's status and when it arrived, and when each request left."""

    def __init__(self) -> None:
        self.sent: list[float] = []
        self.answers: list[tuple[int, float, float | None]] = []

    def on_request(self, request: httpx.Request) -> None:
        self.sent.append(time.monotonic())

    def on_response(self, response: httpx.Response) -> None:
        self.answers.append((response.status_code, time.monotonic(), _core.retry_after_seconds(response)))

    def client(self) -> httpx.Client:
        return httpx.Client(event_hooks={"request": [self.on_request], "response": [self.on_response]})

    def async_client(self) -> httpx.AsyncClient:
        async def on_request(request: httpx.Request) -> None:
            self.on_request(request)

        async def on_response(response: httpx.Response) -> None:
            self.on_response(response)

        return httpx.AsyncClient(event_hooks={"request": [on_request], "response": [on_response]})


def test_a_429_without_retries_raises_rate_limited_with_retry_after(hub: Hub, throttled_hub_url: str) -> None:
    with MemoryHub(throttled_hub_url, hub.token, max_retries=0) as impatient, pytest.raises(RateLimited) as refused:
        for _ in range(BURST):
            impatient.info()
    assert refused.value.status == 429
    assert refused.value.retry_after is not None and 0 < refused.value.retry_after <= 1


def _assert_each_retry_waited_out_retry_after(recorder: Recorder) -> None:
    statuses = [status for status, _, _ in recorder.answers]
    assert 429 in statuses, f"{BURST} calls in a row never met the rate limit"
    assert statuses[-1] == 200
    for (status, answered_at, retry_after), next_sent in zip(recorder.answers, recorder.sent[1:], strict=False):
        if status == 429:
            assert retry_after is not None
            assert next_sent - answered_at >= retry_after - 0.01


def test_a_429_is_retried_after_the_hubs_retry_after(hub: Hub, throttled_hub_url: str) -> None:
    recorder = Recorder()
    with MemoryHub(throttled_hub_url, hub.token, max_retries=3, http_client=recorder.client()) as patient:
        # Calls in a row until one meets the limit: every call still answers, the limited one after waiting.
        for _ in range(BURST):
            assert patient.info().backend == "local"
            if any(status == 429 for status, _, _ in recorder.answers):
                break
    _assert_each_retry_waited_out_retry_after(recorder)


def test_the_async_client_waits_out_retry_after_too(hub: Hub, throttled_hub_url: str) -> None:
    recorder = Recorder()

    async def calls() -> None:
        async with AsyncMemoryHub(
            throttled_hub_url, hub.token, max_retries=3, http_client=recorder.async_client()
        ) as patient:
            for _ in range(BURST):
                assert (await patient.info()).backend == "local"
                if any(status == 429 for status, _, _ in recorder.answers):
                    break

    asyncio.run(calls())
    _assert_each_retry_waited_out_retry_after(recorder)


def test_a_write_is_retried_after_a_429_too_since_the_limit_refuses_before_acting(
    hub: Hub, throttled_hub_url: str, uid: str
) -> None:
    recorder = Recorder()
    written = []
    with MemoryHub(throttled_hub_url, hub.token, max_retries=3, http_client=recorder.client()) as patient:
        for number in range(BURST):
            outcomes = patient.batch(uid, [BatchOperation.put(f"k{number}", "v")])
            assert [outcome.status for outcome in outcomes] == ["created"]
            written.append(f"k{number}")
            if any(status == 429 for status, _, _ in recorder.answers):
                break
    _assert_each_retry_waited_out_retry_after(recorder)
    # Each batch was applied once, the refused attempt not at all.
    with MemoryHub(hub.url, hub.token) as unthrottled:
        for key in written:
            assert [event.action for event in unthrottled.history(uid, key)] == ["create"]


def test_a_retry_after_longer_than_the_caller_waits_is_raised_at_once(hub: Hub, throttled_hub_url: str) -> None:
    recorder = Recorder()
    with (
        MemoryHub(
            throttled_hub_url, hub.token, max_retries=3, max_retry_wait=0.05, http_client=recorder.client()
        ) as hurried,
        pytest.raises(RateLimited),
    ):
        for _ in range(BURST):
            hurried.info()
    # The 429 was the last request sent: no retry followed it.
    assert recorder.answers[-1][0] == 429
    assert len(recorder.sent) == len(recorder.answers)
    assert [status for status, _, _ in recorder.answers].count(429) == 1


def _answer(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers)


SETTINGS = _core.Settings.from_arguments(
    "http://hub.invalid", "token", timeout=1, max_retries=2, backoff=0.5, max_retry_wait=30
)


def test_a_503_is_retried_only_for_calls_that_are_safe_to_repeat() -> None:
    read = _calls.entry_get("alice", "language")
    batch = _calls.entries_batch("alice", [])
    restore = _calls.entry_restore("alice", "language")
    assert _core.delay_after_response(SETTINGS, read, 0, _answer(503, {"Retry-After": "2"})) == 2
    assert _core.delay_after_response(SETTINGS, batch, 0, _answer(503)) is None
    assert _core.delay_after_response(SETTINGS, restore, 0, _answer(503)) is None
    assert _core.delay_after_response(SETTINGS, read, 0, _answer(500)) is None


def test_a_503_saying_the_database_rolled_the_request_back_is_retried_for_any_call() -> None:
    # Nothing was written (a deadlock lost, a lock held too long): an erase or a batch may be sent again as it was.
    erase = _calls.user_forget("alice", erase=True)
    busy = httpx.Response(503, headers={"Retry-After": "1"}, json={"detail": "busy", "code": "database_busy"})
    unreachable = httpx.Response(503, json={"detail": "gone", "code": "database_unreachable"})
    assert _core.delay_after_response(SETTINGS, erase, 0, busy) == 1
    assert _core.delay_after_response(SETTINGS, _calls.entries_batch("alice", []), 0, busy) == 1
    assert _core.delay_after_response(SETTINGS, erase, 0, unreachable) is None


def test_backoff_doubles_and_retries_stop_at_the_limit() -> None:
    read = _calls.entry_get("alice", "language")
    first = _core.delay_after_response(SETTINGS, read, 0, _answer(503))
    second = _core.delay_after_response(SETTINGS, read, 1, _answer(503))
    assert first is not None and 0.5 <= first <= 0.625
    assert second is not None and 1.0 <= second <= 1.25
    assert _core.delay_after_response(SETTINGS, read, 2, _answer(503)) is None


def test_a_lost_connection_is_retried_only_when_nothing_was_sent_or_the_call_is_safe() -> None:
    batch = _calls.entries_batch("alice", [])
    read = _calls.entry_get("alice", "language")
    assert _core.delay_after_error(SETTINGS, batch, 0, httpx.ConnectError("refused")) is not None
    assert _core.delay_after_error(SETTINGS, batch, 0, httpx.ReadTimeout("slow")) is None
    assert _core.delay_after_error(SETTINGS, read, 0, httpx.ReadTimeout("slow")) is not None


def _put(**condition: object) -> _core.Call[Entry]:
    arguments: dict = {"kind": None, "meta": None, "if_match": None, "create_only": False, **condition}
    return _calls.entry_put("alice", "language", "prefers Python", **arguments)


def test_calls_whose_repeat_answers_otherwise_are_not_retried_once_they_may_have_been_sent() -> None:
    # Sent again after the hub made the change, each would answer 404 or 412 for a change that was made.
    repeat_differs: list[_core.Call[Any]] = [
        _put(create_only=True),
        _put(if_match=3),
        _calls.entry_update("alice", "language", value="x", kind=None, meta=None, if_match=3),
        _calls.entry_delete("alice", "language", if_match=None),
        _calls.user_forget("alice"),
    ]
    for call in repeat_differs:
        assert _core.delay_after_error(SETTINGS, call, 0, httpx.ReadTimeout("slow")) is None, call
        assert _core.delay_after_error(SETTINGS, call, 0, httpx.ConnectError("refused")) is not None, call
    # Set to the same value twice, an entry is as it was after once.
    for call in (_put(), _calls.entry_update("alice", "language", value="x", kind=None, meta=None, if_match=None)):
        assert _core.delay_after_error(SETTINGS, call, 0, httpx.ReadTimeout("slow")) is not None, call


class LoseNextAnswer(httpx.BaseTransport):
    """Sends each request to the hub; when armed, the connection breaks after the hub answered (the answer is lost)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.armed = False
        self.sent = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent += 1
        response = self.inner.handle_request(request)
        response.read()
        if self.armed:
            self.armed = False
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
        return response


def test_a_write_whose_answer_was_lost_says_it_may_have_been_made_instead_of_failing_on_its_own_change(
    hub: Hub, uid: str
) -> None:
    lossy = LoseNextAnswer()
    with (
        MemoryHub(hub.url, hub.token, backoff=0.01, http_client=httpx.Client(transport=lossy)) as client,
        MemoryHub(hub.url, hub.token) as reader,
    ):
        lossy.armed = True
        with pytest.raises(HubConnectionError, match="may have made the change"):
            client.put(uid, "editor", "vim", create_only=True)
        assert (reader.get(uid, "editor").value, lossy.sent) == ("vim", 1)

        lossy.armed = True
        with pytest.raises(HubConnectionError, match="may have made the change"):
            client.delete(uid, "editor")
        with pytest.raises(NotFound):
            reader.get(uid, "editor")

        # A plain put is sent again, and the second answer is the caller's.
        lossy.armed = True
        assert client.put(uid, "editor", "helix").value == "helix"
        assert lossy.sent == 4


def test_retry_after_as_an_http_date_is_read_as_seconds_from_now() -> None:
    in_ten_seconds = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 10))
    seconds = _core.retry_after_seconds(_answer(429, {"Retry-After": in_ten_seconds}))
    assert seconds is not None and 8 <= seconds <= 10
    assert _core.retry_after_seconds(_answer(429, {"Retry-After": "soon"})) is None
