"""The MCP tools called in process, on the test's database (the real servers' tests are test_mcp_stdio and
test_mcp_http)."""

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from mcp.server.mcpserver.exceptions import ToolError

from memories import selectors, services
from memories.embeddings.store import embeddings_process_pending
from memories.mcp.tools import build_server
from memories.models import MemoryEntry
from memories.search import hybrid

SEARCH_FIELDS = ("score", "matched_terms", "lexical_rank", "semantic_similarity", "relevant")


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


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (
            {"kind": 5},
            "Invalid argument `kind`: input should be a valid string or a valid list. Change `kind` and call recall "
            "again.",
        ),
        (
            {"meta": {"project": None}},
            "Invalid argument `meta.project`: input should be a valid string, a valid integer, a valid number, a valid "
            "boolean or a valid list. Change `meta.project` and call recall again.",
        ),
        (
            # a meta field may be called like a union's member: it is still the argument's own place
            {"meta": {"str": None}, "limit": 0},
            "Invalid argument `limit`: input should be greater than or equal to 1. Invalid argument `meta.str`: input "
            "should be a valid string, a valid integer, a valid number, a valid boolean or a valid list. Change "
            "`limit`, `meta.str` and call recall again.",
        ),
    ],
)
def test_an_argument_of_several_allowed_types_is_named_as_sent_with_what_it_may_be(call, arguments, said):
    # Not `kind.str`, `kind.list[str]`: names the model cannot send, each with half of what is allowed.
    assert _error(call, "recall", {"uid": "dave", "query": "x", **arguments}) == said


@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    [
        ("remember", {"uid": "dave", "key": "k", "value": "v", "kind": "x" * 40}, "Invalid argument `kind`: must be 1"),
        ("get", {"uid": "dave", "key": "nope"}, "No memory with key 'nope' for uid 'dave'"),
        ("forget", {"uid": "dave", "key": "nope"}, "No memory with key 'nope' for uid 'dave'"),
    ],
)
def test_a_tools_own_refusal_reads_as_the_schemas_do(call, name, arguments, said):
    # One form for every tool error, the one docs/AGENTS.md shows: no "Error executing tool NAME: " before some.
    assert _error(call, name, arguments).startswith(said)


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("remember", {"key": "k", "value": "v", "ttl": True}, "ttl"),
        ("remember", {"key": "k", "value": "v", "expected_version": True}, "expected_version"),
        ("forget", {"key": "k", "expected_version": True}, "expected_version"),
        ("recall", {"query": "x", "limit": True}, "limit"),
        ("list", {"page": True}, "page"),
        ("history", {"key": "k", "page_size": True}, "page_size"),
        ("context", {"budget": True}, "budget"),
    ],
)
def test_true_is_not_taken_for_the_whole_number_1(owner, call, name, arguments, field):
    # A ttl of true was a memory kept for one second.
    message = _error(call, name, {"uid": "dave", **arguments})

    assert message == (
        f"Invalid argument `{field}`: input should be a whole number, not true or false. Change `{field}` and "
        f"call {name} again."
    )
    assert not MemoryEntry.objects.filter(owner=owner).exists()
    # A whole number sent as digits is still taken, as before.
    assert call("remember", {"uid": "dave", "key": "k", "value": "v", "ttl": "60"}).structured_content["expires"]


def test_remember_sets_an_expiry_keeps_it_and_removes_it(owner, call):
    set_ = call("remember", {"uid": "dave", "key": "mood", "value": "tired", "ttl": 3600}).structured_content
    kept = call("remember", {"uid": "dave", "key": "mood", "value": "rested"}).structured_content
    removed = call("remember", {"uid": "dave", "key": "mood", "value": "rested", "never_expires": True})

    assert set_["expires"] is not None and kept["expires"] == set_["expires"]
    assert removed.structured_content["expires"] is None
    assert selectors.entry_get(owner=owner, uid="dave", key="mood").expires is None
    both = _error(call, "remember", {"uid": "dave", "key": "mood", "value": "x", "ttl": 60, "never_expires": True})
    assert both.startswith("Invalid argument `never_expires`: give ttl or never_expires, not both.")


@pytest.mark.parametrize(("name", "arguments"), [("list", {}), ("recall", {"query": "x"})])
def test_an_empty_kind_is_refused_as_the_api_refuses_it(owner, call, name, arguments):
    services.entry_put(owner=owner, uid="dave", key="k", value="x")

    message = _error(call, name, {"uid": "dave", "kind": "", **arguments})

    assert message.startswith("Invalid argument `kind`: must be 1 to 32 characters; got 0.")


def test_a_misnamed_argument_is_refused_not_dropped_for_its_default(owner, call):
    # "user" for "uid": dropped unread, the memory would be about the user "default".
    message = _error(call, "remember", {"user": "bob", "key": "language", "value": "prefers Python"})

    assert message == (
        "Invalid argument `user`: remember has no such argument. remember takes key, value, uid, kind, meta, "
        "expected_version, privacy, ttl, never_expires. Change `user` and call remember again."
    )
    assert not MemoryEntry.objects.filter(owner=owner).exists()
    assert "Invalid argument `q`: context has no such argument." in _error(call, "context", {"uid": "bob", "q": "x"})


@pytest.fixture
def alice_with_embeddings(owner, settings):
    settings.MEMORYHUB_EMBEDDINGS = "local"
    hybrid.provider_pause_clear()
    for key, value in {
        "pet": "has a golden retriever called Miso",
        "editor": "uses vim with a handful of plugins",
        "allergy": "allergic to peanuts and tree nuts",
    }.items():
        services.entry_put(owner=owner, uid="alice", key=key, value=value)
    embeddings_process_pending()
    yield
    hybrid.provider_pause_clear()


@pytest.mark.parametrize("query", ["which editor, vim?", "what kind of dog", "nuts"])
def test_recall_results_are_the_q_results_with_what_ranked_them(owner_api, call, alice_with_embeddings, query):
    api = owner_api.get("/api/v1/users/alice/memories/", {"q": query})

    recalled = call("recall", {"uid": "alice", "query": query, "limit": 2}).structured_content

    assert recalled["ranking"] == api["X-MemoryHub-Ranking"] == "hybrid"
    assert recalled["results"] == api.json()["results"][:2]
    assert recalled["count"] == len(recalled["results"]) > 0
    assert all(field in result for result in recalled["results"] for field in SEARCH_FIELDS)


def test_recall_says_whether_the_first_result_passes_the_relevance_cut_off(call, alice_with_embeddings):
    found = call("recall", {"uid": "alice", "query": "which editor, vim?"}).structured_content["results"][0]

    assert (found["key"], found["relevant"], found["lexical_rank"]) == ("editor", True, 1)
    assert found["matched_terms"] == ["editor", "vim"] and found["semantic_similarity"] is not None


@pytest.mark.parametrize("query", ["coffee", "co"])
def test_recall_with_embeddings_off_gives_the_q_fields_too(owner, owner_api, call, settings, query):
    settings.MEMORYHUB_EMBEDDINGS = "off"
    services.entry_put(owner=owner, uid="bob", key="drink", value="black coffee, no sugar")
    api = owner_api.get("/api/v1/users/bob/memories/", {"q": query})

    recalled = call("recall", {"uid": "bob", "query": query}).structured_content

    assert recalled["ranking"] == api["X-MemoryHub-Ranking"] and recalled["ranking"].startswith("lexical")
    assert recalled["results"] == api.json()["results"]
    assert [result["relevant"] for result in recalled["results"]] == [None]
