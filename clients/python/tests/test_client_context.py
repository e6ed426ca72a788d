"""The context block through the client: what an agent puts in its prompt each turn, and the 304 that
spares it when nothing changed."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from live_hub import Hub
from memoryhub_client import AsyncMemoryHub, BadRequest, MemoryHub


def _remember(client: MemoryHub, uid: str) -> None:
    client.put(uid, "language", "prefers Python", kind="preference")
    client.put(uid, "editor", "uses vim with a light theme", kind="tool")
    client.put(uid, "reply", "answers in French", kind="preference")


def test_the_block_shows_the_newest_memories_within_the_default_budget(client: MemoryHub, uid: str) -> None:
    _remember(client, uid)
    block = client.context(uid)

    assert block.uid == uid and block.budget == 2200 and block.total == 3
    assert block.text.startswith(f"Memories about {uid} (3 of 3, newest first):\n")
    assert "- editor (tool): uses vim with a light theme\n" in block.text
    assert [(entry.key, entry.reason) for entry in block.entries] == [
        ("reply", "recent"),
        ("editor", "recent"),
        ("language", "recent"),
    ]
    assert block.length == len(block.text) <= block.budget
    assert block.etag


def test_q_puts_the_matching_memory_first(client: MemoryHub, uid: str) -> None:
    _remember(client, uid)
    block = client.context(uid, q="python")
    assert (block.entries[0].key, block.entries[0].reason) == ("language", "relevant")
    assert block.query == "python"


def test_a_small_budget_is_never_exceeded_and_never_cuts_a_memory(client: MemoryHub, uid: str) -> None:
    _remember(client, uid)
    for budget in (1, 40, 60, 90, 120):
        block = client.context(uid, budget=budget)
        assert len(block.text) <= budget
        values = {"language": "prefers Python", "editor": "uses vim with a light theme", "reply": "answers in French"}
        for entry in block.entries:
            assert f"- {entry.key} ({entry.kind}): {values[entry.key]}\n" in block.text


def test_the_previous_block_comes_back_until_a_write_changes_it(hub: Hub, uid: str) -> None:
    statuses: list[int] = []
    recording = httpx.Client(event_hooks={"response": [lambda response: statuses.append(response.status_code)]})
    with MemoryHub(hub.url, hub.token, http_client=recording) as client:
        _remember(client, uid)
        first = client.context(uid, q="vim")
        again = client.context(uid, q="vim", previous=first)
        assert again is first
        assert statuses[-1] == 304

        client.put(uid, "timezone", "Europe/Paris")
        changed = client.context(uid, q="vim", previous=first)
        assert changed is not first and changed.etag != first.etag
        assert changed.total == 4 and "timezone" in changed.text


def test_a_budget_the_hub_refuses_is_a_bad_request_naming_it(client: MemoryHub, uid: str) -> None:
    with pytest.raises(BadRequest) as refused:
        client.context(uid, budget=0)
    assert set(refused.value.errors) == {"budget"}


def test_the_async_client_gets_the_same_block(hub: Hub, client: MemoryHub, uid: str) -> None:
    _remember(client, uid)
    blocking = client.context(uid, q="french", budget=500)

    async def fetch() -> tuple[object, object]:
        async with AsyncMemoryHub(hub.url, hub.token) as awaited:
            block = await awaited.context(uid, q="french", budget=500)
            return block, await awaited.context(uid, q="french", budget=500, previous=block)

    block, again = asyncio.run(fetch())
    assert block == blocking
    assert again is block
