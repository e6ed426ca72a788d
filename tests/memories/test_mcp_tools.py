"""The MCP tools called in process, on the test's database (the real servers' tests are test_mcp_stdio and
test_mcp_http)."""

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from mcp.server.mcpserver.exceptions import ToolError

from memories import services
from memories.mcp.tools import build_server


@pytest.fixture
def call(owner, monkeypatch):
    """Call a tool as owner. The tools close the connections a request would (memories.mcp.tools._as_request),
    which would close the test's own, in its transaction: they are left open here."""
    monkeypatch.setattr("memories.mcp.tools.close_old_connections", lambda: None)
    server = build_server(lambda ctx: owner)

    def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        return async_to_sync(server.call_tool)(name, arguments)

    return call_tool


def _error(call, name: str, arguments: dict[str, Any]) -> str:
    with pytest.raises(ToolError) as error:
        call(name, arguments)
    return str(error.value)


def test_history_past_the_last_page_names_page_and_the_last_page(owner, call):
    for value in ("one", "two", "three"):
        services.entry_put(owner=owner, uid="dave", key="pages", value=value)

    message = _error(call, "history", {"uid": "dave", "key": "pages", "page": 3, "page_size": 2})

    assert message.endswith(
        "Invalid argument `page`: must be at most 2: the memory has 3 changes. Change `page` and call history again."
    )


def test_history_past_the_last_page_of_one_change_says_so(owner, call):
    services.entry_put(owner=owner, uid="dave", key="pages", value="x")

    message = _error(call, "history", {"uid": "dave", "key": "pages", "page": 99999999999999999999})

    assert "must be at most 1: the memory has 1 change." in message
    assert "ask for page" not in message


@pytest.mark.parametrize("page", [1, 12])
def test_history_of_a_key_never_stored_says_so_on_any_page(call, page):
    message = _error(call, "history", {"uid": "dave", "key": "never", "page": page})

    assert message.endswith("No history for key 'never' of uid 'dave': that memory was never stored.")


def test_history_answers_a_page_of_changes(owner, call):
    for value in ("one", "two", "three"):
        services.entry_put(owner=owner, uid="dave", key="pages", value=value)

    page = call("history", {"uid": "dave", "key": "pages", "page": 2, "page_size": 2}).structured_content

    assert (page["count"], page["page"], page["next_page"]) == (3, 2, None)
    assert [change["value_after"] for change in page["changes"]] == ["one"]


@pytest.mark.parametrize(("stored", "said"), [(1, "there is 1 memory."), (3, "there are 3 memories.")])
def test_list_past_the_last_page_names_page_and_how_many_memories_there_are(owner, call, stored, said):
    for number in range(stored):
        services.entry_put(owner=owner, uid="dave", key=f"k{number}", value="v")

    message = _error(call, "list", {"uid": "dave", "page": 2, "page_size": 5})

    assert f"Invalid argument `page`: must be at most 1: {said}" in message
