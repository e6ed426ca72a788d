"""Ranked full-text search: what an agent or a person sees when they query one user's memories."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memories import selectors, services


def _put(owner, key: str, value: str, uid: str = "alice") -> None:
    services.entry_put(owner=owner, uid=uid, key=key, value=value)


def _found_keys(owner, query_text: str, uid: str = "alice", **options) -> list[str]:
    return [entry.key for entry in selectors.entry_find(owner=owner, uid=uid, query_text=query_text, **options)]


def test_it_finds_a_substring_in_any_case(owner):
    _put(owner, "language", "Prefers PYTHON over Java")
    _put(owner, "editor", "uses vim")
    assert _found_keys(owner, "python") == ["language"]
    assert _found_keys(owner, "thon ov") == ["language"]


def test_it_finds_text_in_the_key(owner):
    _put(owner, "favourite-editor", "vim")
    assert _found_keys(owner, "favourite") == ["favourite-editor"]


def test_a_match_in_the_key_ranks_above_a_match_in_the_value(owner):
    _put(owner, "python", "a language the person uses daily")
    _put(owner, "notes", "mentioned python once, in passing, among many other words here")
    assert _found_keys(owner, "python") == ["python", "notes"]


def test_equally_relevant_entries_come_newest_first(owner):
    for key in ("k1", "k2", "k3"):
        _put(owner, key, "likes tea")
    assert _found_keys(owner, "tea") == ["k3", "k2", "k1"]


def test_a_changed_value_is_found_by_its_new_text_and_not_its_old(owner):
    _put(owner, "drink", "coffee")
    _put(owner, "drink", "green tea")
    assert _found_keys(owner, "coffee") == []
    assert _found_keys(owner, "green") == ["drink"]


def test_a_deleted_entry_is_no_longer_found(owner):
    _put(owner, "drink", "coffee")
    services.entry_delete(owner=owner, uid="alice", key="drink")
    assert _found_keys(owner, "coffee") == []


def test_a_forgotten_user_is_no_longer_found(owner):
    _put(owner, "drink", "coffee")
    services.user_forget(owner=owner, uid="alice")
    assert _found_keys(owner, "coffee") == []


def test_it_never_finds_another_accounts_or_another_users_entries(owner, stranger):
    _put(stranger, "drink", "coffee")
    _put(owner, "drink", "coffee", uid="bob")
    assert _found_keys(owner, "coffee") == []


@pytest.mark.parametrize("query_text", ["e", "vi"])
def test_queries_of_one_or_two_characters_scan_for_the_substring(owner, query_text):
    _put(owner, "editor", "vim")
    _put(owner, "drink", "tea")
    assert "editor" in _found_keys(owner, query_text)


def test_search_syntax_in_a_query_is_taken_literally(owner):
    _put(owner, "quote", 'she said "hi" AND left (fast) *')
    _put(owner, "other", "bye")
    assert _found_keys(owner, '"hi" AND') == ["quote"]
    assert _found_keys(owner, "(fast) *") == ["quote"]


def test_the_words_of_a_query_match_in_any_order_and_apart(owner):
    _put(owner, "plan", "left early, said hi")
    _put(owner, "language", "prefers Python, writes Rust on weekends")
    assert _found_keys(owner, "hi left") == ["plan"]
    assert _found_keys(owner, "python rust") == ["language"]


def test_the_api_query_uses_the_index_and_substring_match_keeps_the_scan(owner, owner_api):
    _put(owner, "python", "the language")
    _put(owner, "notes", "likes python a lot, and other things too, in many many words")
    _put(owner, "later", "python again, the newest of the three entries")
    ranked = owner_api.get("/api/v1/users/alice/memories", {"q": "python"}).json()
    scanned = owner_api.get("/api/v1/users/alice/memories", {"q": "python", "match": "substring"}).json()
    assert ranked["results"][0]["key"] == "python"
    assert [entry["key"] for entry in scanned["results"]] == ["later", "notes", "python"]


def test_a_query_of_spaces_alone_lists_every_memory_newest_first_as_no_query_does(owner, owner_api):
    _put(owner, "spaced", "two  spaces   three")
    _put(owner, "plain", "one")
    _put(owner, "newest", "tea")
    listed = owner_api.get("/api/v1/users/alice/memories").json()
    assert [entry["key"] for entry in listed["results"]] == ["newest", "plain", "spaced"]
    for blank in ("   ", "  ", " \t"):
        response = owner_api.get("/api/v1/users/alice/memories", {"q": blank})
        assert response.status_code == 200
        assert response.json() == listed
        assert "X-MemoryHub-Ranking" not in response


def test_the_api_refuses_an_unknown_match_mode_naming_the_choices(owner_api):
    response = owner_api.get("/api/v1/users/alice/memories", {"q": "python", "match": "fuzzy"})
    assert response.status_code == 400
    assert "ranked, substring" in response.json()["match"][0]


def test_the_tool_query_returns_the_best_match_first(owner, owner_api):
    _put(owner, "notes", "python mentioned once among many other words in this long value", uid="default")
    _put(owner, "python", "a language", uid="default")
    reply = owner_api.post("/api/v1/tool", {"action": "query", "query": "python"}, format="json").json()
    assert [result["key"] for result in reply["results"]] == ["python", "notes"]


# Text drawn from a small alphabet (with case, spaces, quotes and a non-ASCII letter) so that
# random queries often hit; keys are distinct so each example stores a fresh set of entries.
TEXT = st.text(alphabet="abcABC xyz\"'*-é", min_size=0, max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    values=st.lists(TEXT, min_size=1, max_size=8),
    query_text=st.text(alphabet="abcABC xyz\"'*-é", min_size=1, max_size=6),
)
@pytest.mark.slow
def test_the_index_finds_every_entry_that_the_substring_scan_finds(owner, values, query_text):
    services.user_forget(owner=owner, uid="prop")
    for number, value in enumerate(values):
        services.entry_put(owner=owner, uid="prop", key=f"k{number}{value[:3]}", value=value or "-")
    scanned = set(_found_keys(owner, query_text, uid="prop", match=selectors.MATCH_SUBSTRING))
    ranked = _found_keys(owner, query_text, uid="prop")
    assert scanned <= set(ranked)
    assert len(ranked) == len(set(ranked))


def test_the_kind_filter_narrows_ranked_results(owner):
    services.entry_put(owner=owner, uid="alice", key="drink", value="green tea", kind="fact")
    services.entry_put(owner=owner, uid="alice", key="wish", value="more green tea", kind="preference")
    assert _found_keys(owner, "green", kind="fact") == ["drink"]
