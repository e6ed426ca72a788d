"""AsyncMemoryHub against a real hub: the same answers and errors as MemoryHub, awaited."""

from __future__ import annotations

import asyncio
import socket

import pytest
from live_hub import Hub
from memoryhub_client import (
    AsyncMemoryHub,
    BadRequest,
    BatchOperation,
    Conflict,
    HubConnectionError,
    HubTimeout,
    NotFound,
    PreconditionFailed,
)


def test_a_memory_goes_round_trip_awaited(hub: Hub, uid: str) -> None:
    async def scenario() -> None:
        async with AsyncMemoryHub(hub.url, hub.token) as client:
            created = await client.put(uid, "language", "prefers Python", kind="preference", meta={"n": 1})
            assert (created.version, created.etag) == (1, '"1"')
            assert await client.get(uid, "language") == created
            patched = await client.update(uid, "language", value="prefers Rust", if_match=created)
            assert (patched.version, patched.value, patched.meta) == (2, "prefers Rust", {"n": 1})
            await client.delete(uid, "language", if_match=patched)
            with pytest.raises(NotFound):
                await client.get(uid, "language")
            restored = await client.restore(uid, "language")
            assert (restored.value, restored.version) == ("prefers Rust", 3)
            with pytest.raises(Conflict):
                await client.restore(uid, "language")
            actions = [event.action async for event in await client.history(uid, "language")]
            assert actions == ["create", "delete", "update", "create"]

    asyncio.run(scenario())


def test_errors_are_the_same_exceptions_as_the_blocking_clients(hub: Hub, uid: str) -> None:
    async def scenario() -> None:
        async with AsyncMemoryHub(hub.url, hub.token) as client:
            first = await client.put(uid, "shell", "bash")
            await client.put(uid, "shell", "zsh")
            with pytest.raises(PreconditionFailed):
                await client.put(uid, "shell", "fish", if_match=first)
            with pytest.raises(PreconditionFailed):
                await client.put(uid, "shell", "fish", create_only=True)
            with pytest.raises(BadRequest) as refused:
                await client.put(uid, "shell", "fish", kind="")
            assert set(refused.value.errors) == {"kind"}
            assert (await client.get(uid, "shell")).value == "zsh"

    asyncio.run(scenario())


def test_async_for_walks_every_page_and_concurrent_writes_all_land(hub: Hub, uid: str) -> None:
    async def scenario() -> None:
        async with AsyncMemoryHub(hub.url, hub.token) as client:
            await asyncio.gather(*(client.put(uid, f"note-{number:02}", f"value {number}") for number in range(12)))
            page = await client.entries(uid, page_size=5)
            assert (len(page.items), page.count, page.has_next) == (5, 12, True)
            keys = [entry.key async for entry in page]
            assert sorted(keys) == [f"note-{number:02}" for number in range(12)]
            assert len(set(keys)) == 12

            found = await client.search(uid, "value 7")
            assert found[0].key == "note-07"
            outcomes = await client.batch(uid, [BatchOperation.delete(key) for key in keys[:3]])
            assert {outcome.status for outcome in outcomes} == {"deleted"}
            summaries = [summary async for summary in await client.users(search=uid)]
            assert [(summary.uid, summary.entries) for summary in summaries] == [(uid, 9)]
            assert (await client.info()).backend == "local"
            assert (await client.sync_status()).enabled is False
            assert [run.results[0]["name"] async for run in await client.evaluations()] == ["null"]
            assert await client.forget(uid) == 9

    asyncio.run(scenario())


def test_an_unreachable_or_silent_hub_raises_connection_errors_awaited() -> None:
    async def scenario(closed_url: str, silent_url: str) -> None:
        async with AsyncMemoryHub(closed_url, "token", max_retries=1, backoff=0.01) as unreachable:
            with pytest.raises(HubConnectionError, match="Cannot reach"):
                await unreachable.info()
        async with AsyncMemoryHub(silent_url, "token", timeout=0.3, max_retries=0) as stuck:
            with pytest.raises(HubTimeout):
                await stuck.info()

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # connections wait in the backlog, never answered
        asyncio.run(scenario(f"http://127.0.0.1:{closed_port}", f"http://127.0.0.1:{silent.getsockname()[1]}"))
