"""The tool endpoint answers exactly as the agent-side memory_backend tool does."""

import pytest

from memories import selectors, services

TOOL = "/api/v1/tool"


def call(client, **arguments):
    response = client.post(TOOL, arguments, format="json")
    assert response.status_code == 200
    return response.json()


def test_store_replies_ok_with_the_key_and_upserts(owner, owner_api):
    assert call(owner_api, action="store", uid="alice", key="language", value="prefers Python") == {
        "ok": True,
        "key": "language",
    }
    assert call(owner_api, action="store", uid="alice", key="language", value="prefers Rust") == {
        "ok": True,
        "key": "language",
    }

    entry = selectors.entry_get(owner=owner, uid="alice", key="language")
    assert (entry.value, entry.version) == ("prefers Rust", 2)


def test_store_takes_the_kind_from_meta_type_as_the_tool_always_did(owner, owner_api):
    call(owner_api, action="store", uid="alice", key="tz", value="CET", meta={"type": "fact", "source": "chat"})

    entry = selectors.entry_get(owner=owner, uid="alice", key="tz")
    assert (entry.kind, entry.meta) == ("fact", {"type": "fact", "source": "chat"})


def test_uid_defaults_to_default(owner, owner_api):
    call(owner_api, action="store", key="language", value="Python")

    assert selectors.entry_get(owner=owner, uid="default", key="language").value == "Python"


@pytest.mark.parametrize("arguments", [{"value": "v"}, {"key": "k"}, {"key": "", "value": "v"}])
def test_store_without_key_and_value_says_so(owner_api, arguments):
    assert call(owner_api, action="store", **arguments) == {"ok": False, "error": "key+value required"}


def test_store_of_an_empty_value_is_allowed(owner_api):
    assert call(owner_api, action="store", key="note", value="") == {"ok": True, "key": "note"}


def test_store_beyond_a_limit_is_refused_with_the_field_and_limit(owner_api):
    reply = call(owner_api, action="store", key="big", value="v" * (64 * 1024 + 1))

    assert reply["ok"] is False
    assert reply["key"] == "big"
    assert "value" in reply["error"] and "65536 bytes" in reply["error"]


def test_get_replies_key_value_and_type(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python", kind="fact")

    assert call(owner_api, action="get", uid="alice", key="language") == {
        "ok": True,
        "key": "language",
        "value": "prefers Python",
        "type": "fact",
    }


def test_get_errors_are_the_tools(owner_api):
    assert call(owner_api, action="get", uid="alice") == {"ok": False, "error": "key required"}
    assert call(owner_api, action="get", uid="alice", key="missing") == {"ok": False, "error": "not found"}


def test_query_replies_matching_keys_and_values_newest_first(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=owner, uid="alice", key="python-version", value="3.11")

    assert call(owner_api, action="query", uid="alice", query="python") == {
        "ok": True,
        "results": [{"key": "python-version", "value": "3.11"}, {"key": "language", "value": "prefers Python"}],
        "count": 2,
    }
    assert call(owner_api, action="query", uid="alice", query="nothing like it") == {
        "ok": True,
        "results": [],
        "count": 0,
    }


def test_query_returns_at_most_ten_results(owner, owner_api):
    for number in range(12):
        services.entry_put(owner=owner, uid="alice", key=f"note{number}", value="same word")

    assert call(owner_api, action="query", uid="alice", query="word")["count"] == 10


def test_query_takes_a_limit_of_results(owner, owner_api):
    for number in range(12):
        services.entry_put(owner=owner, uid="alice", key=f"note{number}", value="same word")

    assert call(owner_api, action="query", uid="alice", query="word", limit=3)["count"] == 3
    assert call(owner_api, action="query", uid="alice", query="word", limit=12)["count"] == 12
    assert call(owner_api, action="query", uid="alice", query="word", limit=None)["count"] == 10


@pytest.mark.parametrize(
    ("limit", "got"), [(-1, "; got -1"), (0, "; got 0"), (501, "; got 501"), (2.5, ""), ("3", ""), (True, "")]
)
def test_query_refuses_a_limit_out_of_its_range_naming_limit_and_the_range(owner, owner_api, limit, got, settings):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")
    cap = settings.MEMORYHUB_MAX_PAGE_SIZE

    reply = call(owner_api, action="query", uid="alice", query="python", limit=limit)

    assert reply == {"ok": False, "error": f"limit: must be a whole number from 1 to {cap}{got}."}


def test_an_unknown_action_holding_a_lone_surrogate_is_named_by_its_escape(owner_api):
    response = owner_api.generic("POST", TOOL, b'{"action": "\\ud800"}', content_type="application/json")

    assert response.status_code == 200
    assert response.json() == {"ok": False, "error": "unknown: \\ud800"}


def test_query_without_text_says_so(owner_api):
    assert call(owner_api, action="query", uid="alice") == {"ok": False, "error": "query required"}


def test_query_of_many_words_past_the_limit_is_refused_naming_it(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")
    words = " ".join(f"word{number}" for number in range(600))

    assert call(owner_api, action="query", uid="alice", query=words) == {
        "ok": False,
        "error": f"query: must be at most 1000 characters; got {len(words)}.",
    }


def test_list_replies_keys_and_types_newest_first(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="language", value="Python")
    services.entry_put(owner=owner, uid="alice", key="tz", value="CET", kind="fact")

    assert call(owner_api, action="list", uid="alice") == {
        "ok": True,
        "entries": [{"key": "tz", "type": "fact"}, {"key": "language", "type": "preference"}],
        "count": 2,
    }
    assert call(owner_api, action="list", uid="nobody") == {"ok": True, "entries": [], "count": 0}


def test_delete_replies_ok_and_removes_the_entry(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="language", value="Python")

    assert call(owner_api, action="delete", uid="alice", key="language") == {"ok": True}
    assert selectors.entry_get(owner=owner, uid="alice", key="language") is None
    assert call(owner_api, action="delete", uid="alice", key="language") == {"ok": True}
    assert call(owner_api, action="delete", uid="alice") == {"ok": False, "error": "key required"}


def test_info_replies_backend_cloud_and_availability(owner_api):
    assert call(owner_api, action="info") == {"ok": True, "backend": "local", "cloud": False, "available": True}


def test_an_unknown_action_is_named_in_the_error(owner_api):
    assert call(owner_api, action="remember") == {"ok": False, "error": "unknown: remember"}


@pytest.mark.parametrize("arguments", [{}, {"action": None}, {"action": ""}, {"uid": "alice"}])
def test_a_call_without_an_action_says_action_is_required_and_names_the_actions(owner_api, arguments):
    reply = call(owner_api, **arguments)

    assert reply == {"ok": False, "error": "action required: one of store, get, query, list, delete, info, evaluate"}


def test_a_bad_uid_is_refused_with_its_limit(owner_api):
    reply = call(owner_api, action="list", uid="u" * 256)

    assert reply["ok"] is False
    assert "uid" in reply["error"] and "255" in reply["error"]


def test_a_stranger_cannot_reach_the_owners_memories_through_the_tool(owner, owner_api, stranger_api):
    services.entry_put(owner=owner, uid="alice", key="language", value="prefers Python")

    assert call(stranger_api, action="get", uid="alice", key="language") == {"ok": False, "error": "not found"}
    assert call(stranger_api, action="query", uid="alice", query="python")["count"] == 0
    assert call(stranger_api, action="list", uid="alice")["count"] == 0
    call(stranger_api, action="delete", uid="alice", key="language")
    assert selectors.entry_get(owner=owner, uid="alice", key="language").value == "prefers Python"


def test_the_schema_is_the_tools_function_calling_schema(owner_api):
    schema = owner_api.get("/api/v1/tool/schema").json()

    assert schema["name"] == "memory_backend"
    assert schema["parameters"]["required"] == ["action"]
    assert schema["parameters"]["properties"]["action"]["enum"] == [
        "store",
        "get",
        "query",
        "list",
        "delete",
        "info",
        "evaluate",
    ]
    # the reference tool's arguments, and the hub's optional privacy and ttl (store) and kind filter and limit (query)
    assert set(schema["parameters"]["properties"]) == {
        "action", "uid", "key", "value", "query", "meta", "privacy", "kind", "ttl", "limit",
    }  # fmt: skip


@pytest.mark.parametrize("key", [1, ["language"], {"k": "language"}, True])
def test_delete_with_a_key_that_is_not_a_string_is_an_error_and_deletes_nothing(owner, owner_api, key):
    call(owner_api, action="store", uid="alice", key="language", value="prefers Python")

    assert call(owner_api, action="delete", uid="alice", key=key) == {"ok": False, "error": "key must be a string"}
    assert call(owner_api, action="get", uid="alice", key="language")["value"] == "prefers Python"


@pytest.mark.parametrize("key", [1, ["language"], {"k": "language"}, True])
def test_get_with_a_key_that_is_not_a_string_says_so_rather_than_not_found(owner, owner_api, key):
    call(owner_api, action="store", uid="alice", key="language", value="prefers Python")

    assert call(owner_api, action="get", uid="alice", key=key) == {"ok": False, "error": "key must be a string"}


def test_the_actions_come_from_the_settings(owner_api, settings):
    assert settings.MEMORYHUB_TOOL_ACTIONS["evaluate"] == "evaluation.tool.action_evaluate"
    settings.MEMORYHUB_TOOL_ACTIONS = {
        name: path for name, path in settings.MEMORYHUB_TOOL_ACTIONS.items() if name != "evaluate"
    } | {"echo": "tests.memories.test_tool.echo_action"}
    assert call(owner_api, action="evaluate") == {"ok": False, "error": "unknown: evaluate"}
    assert call(owner_api, action="echo", uid="alice") == {"ok": True, "uid": "alice"}


def echo_action(account, uid, args):
    """An action a settings file could add: its uid, checked as every action's is."""
    return {"ok": True, "uid": uid}


@pytest.mark.parametrize(
    ("argument", "given"),
    [("expected_version", 99), ("privcy", "local"), ("expires", "2030-01-01T00:00:00Z")],
)
def test_an_argument_the_tool_does_not_take_is_refused_by_name_and_nothing_changes(owner, owner_api, argument, given):
    call(owner_api, action="store", uid="alice", key="drink", value="tea")

    reply = call(owner_api, action="store", uid="alice", key="drink", value="coffee", **{argument: given})

    assert reply["ok"] is False
    assert reply["error"].startswith(f"{argument}: is no argument of memory_backend; it takes action, uid, key, value")
    entry = selectors.entry_get(owner=owner, uid="alice", key="drink")
    assert (entry.value, entry.version) == ("tea", 1)


def test_an_argument_named_with_a_lone_surrogate_is_named_by_its_escape(owner_api):
    body = '{"action": "store", "key": "k", "value": "v", "\\ud800": 1}'
    reply = owner_api.generic("POST", TOOL, body, "application/json").json()
    assert set(reply) == {"ok", "error"} and reply["ok"] is False
    assert reply["error"].startswith("\\ud800: is no argument of memory_backend")
