"""Metadata and kind filters on list and search: ?meta.FIELD=, ?meta.FIELD__in=, ?kind=, ?kind__in=, with ?q=,
the tool's query and a 400 naming the parameter for a bad filter."""

import pytest
from django.db import connection

from memories import services

MEMORIES = "/api/v1/users/alice/memories/"


@pytest.fixture
def alice(owner):
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses vim", meta={"project": "apollo"})
    services.entry_put(
        owner=owner, uid="alice", key="shell", value="uses fish", kind="fact", meta={"project": "gemini"}
    )
    services.entry_put(owner=owner, uid="alice", key="tabs", value="uses spaces", meta={"project": "apollo", "n": 3})
    services.entry_put(owner=owner, uid="alice", key="font", value="uses a mono font", meta={"priority": True})
    services.entry_put(owner=owner, uid="alice", key="plain", value="uses nothing special")
    return owner


def _keys(api, **params) -> list[str]:
    response = api.get(MEMORIES, params)
    assert response.status_code == 200, response.content
    return sorted(entry["key"] for entry in response.json()["results"])


def test_meta_equality_and_in_narrow_the_list(alice, owner_api):
    assert _keys(owner_api, **{"meta.project": "apollo"}) == ["editor", "tabs"]
    assert _keys(owner_api, **{"meta.project__in": "apollo,gemini"}) == ["editor", "shell", "tabs"]
    assert _keys(owner_api, **{"meta.project": "mercury"}) == []


def test_a_number_or_boolean_in_meta_matches_the_text_that_spells_it(alice, owner_api):
    assert _keys(owner_api, **{"meta.n": "3"}) == ["tabs"]
    assert _keys(owner_api, **{"meta.priority": "true"}) == ["font"]


def test_json_types_stay_apart_on_both_databases(owner, owner_api):
    """SQLite's json_extract reads true as 1 and false as 0: a filter must not, as PostgreSQL's containment does not."""
    for key, flag in [("yes", True), ("no", False), ("one", 1), ("zero", 0), ("one-real", 1.0), ("text-one", "1")]:
        services.entry_put(owner=owner, uid="alice", key=key, value="a flag", meta={"flag": flag})

    assert _keys(owner_api, **{"meta.flag": "true"}) == ["yes"]
    assert _keys(owner_api, **{"meta.flag": "false"}) == ["no"]
    assert _keys(owner_api, **{"meta.flag": "1"}) == ["one", "one-real", "text-one"]
    assert _keys(owner_api, **{"meta.flag": "0"}) == ["zero"]
    assert _keys(owner_api, **{"meta.flag__in": "true,0"}) == ["yes", "zero"]
    assert _keys(owner_api, q="flag", **{"meta.flag": "true"}) == ["yes"]
    reply = owner_api.post(
        "/api/v1/tool", {"action": "query", "uid": "alice", "query": "flag", "meta": {"flag": 1}}, format="json"
    ).json()
    assert sorted(result["key"] for result in reply["results"]) == ["one", "one-real"]
    reply = owner_api.post(
        "/api/v1/tool", {"action": "query", "uid": "alice", "query": "flag", "meta": {"flag": False}}, format="json"
    ).json()
    assert [result["key"] for result in reply["results"]] == ["no"]


def test_filters_combine_with_each_other_with_kind_and_with_q(alice, owner_api):
    assert _keys(owner_api, **{"meta.project": "apollo", "meta.n": "3"}) == ["tabs"]
    assert _keys(owner_api, **{"meta.project__in": "apollo,gemini", "kind": "fact"}) == ["shell"]
    assert _keys(owner_api, kind__in="fact,preference") == ["editor", "font", "plain", "shell", "tabs"]
    assert _keys(owner_api, q="uses", **{"meta.project": "apollo"}) == ["editor", "tabs"]
    assert _keys(owner_api, q="vim", **{"meta.project": "gemini"}) == []
    assert _keys(owner_api, q="us", match="substring", **{"meta.project": "gemini"}) == ["shell"]


def test_a_stranger_filtering_finds_nothing_of_the_owners(alice, stranger_api):
    assert stranger_api.get(MEMORIES, {"meta.project": "apollo"}).json()["count"] == 0


@pytest.mark.parametrize(
    ("params", "field", "says"),
    [
        ({"meta.": "x"}, "meta.", "must name a meta field"),
        ({"meta.a b": "x"}, "meta.a b", "must name a top-level meta field"),
        ({"meta.a__b": "x"}, "meta.a__b", "no '__'"),
        ({"meta.project__in": ""}, "meta.project__in", "1 to 200 characters"),
        ({"meta.project": "x" * 201}, "meta.project", "1 to 200 characters"),
        ({"meta.project__in": ",".join(str(n) for n in range(51))}, "meta.project__in", "at most 50 values"),
        ({"kind": "two words"}, "kind", "must start with a letter or digit"),
        ({"kind": "fact", "kind__in": "fact"}, "kind__in", "not both"),
        ({"kind": ""}, "kind", "must be 1 to 32 characters; got 0"),
        ({"kind__in": ""}, "kind__in", "must be 1 to 32 characters; got 0"),
        ({"kind": "", "kind__in": "fact"}, "kind__in", "not both"),
    ],
)
def test_a_bad_filter_is_a_400_naming_the_parameter(alice, owner_api, params, field, says):
    response = owner_api.get(MEMORIES, params)
    assert response.status_code == 400
    assert says in response.json()[field][0]


def test_the_tool_query_takes_meta_and_kind_filters(alice, owner_api):
    def query(**arguments) -> list[str]:
        reply = owner_api.post("/api/v1/tool", {"action": "query", "uid": "alice", **arguments}, format="json").json()
        assert reply["ok"], reply
        return sorted(result["key"] for result in reply["results"])

    assert query(query="uses", meta={"project": "apollo"}) == ["editor", "tabs"]
    assert query(query="uses", meta={"project": ["gemini", "mercury"]}) == ["shell"]
    assert query(query="uses", kind=["fact"]) == ["shell"]
    refused = owner_api.post(
        "/api/v1/tool", {"action": "query", "uid": "alice", "query": "uses", "meta": {"a b": 1}}, format="json"
    ).json()
    assert refused["ok"] is False and refused["error"].startswith("meta: must name a top-level meta field")


@pytest.mark.parametrize("value", ["\\ud800", "a\\u0000b"])
def test_a_meta_filter_value_no_database_holds_is_refused_naming_it(alice, owner_api, value):
    # A lone surrogate or a NUL, which JSON carries and stored meta never holds: PostgreSQL refused the
    # filter's JSON (a 500); the tool's query, like MCP's search, says which value is bad.
    body = b'{"action": "query", "uid": "alice", "query": "uses", "meta": {"project": "' + value.encode() + b'"}}'
    response = owner_api.generic("POST", "/api/v1/tool", body, content_type="application/json")

    assert response.status_code == 200
    assert response.json() == {
        "ok": False,
        "error": "meta.project: must not contain NUL characters or unpaired surrogates.",
    }


def test_a_meta_filter_reads_an_index_on_both_databases(alice):
    """PostgreSQL: the GIN index over meta answers the filter's containment (for a user, the planner may start from
    the (owner, uid) index instead); SQLite: the (owner, uid) index narrows to the user's rows, which json_extract
    reads.

    On PostgreSQL the filter is read with its expired entries (include_expired) so that the containment is its only
    condition: the expiry condition can be answered by the user index too, which covers expires, and which of the
    two the planner picks then depends on table statistics that autovacuum updates between tests."""
    from memories import selectors
    from memories.filters import filter_from_params
    from memories.models import MemoryEntry

    filters = filter_from_params({"meta.project": "apollo"})
    if connection.vendor == "postgresql":
        containment = filter_from_params({"meta.project": "apollo", "include_expired": "1"})
        entries = MemoryEntry.objects.filter(containment.condition())
    else:
        entries = selectors.entry_list(owner=alice, uid="alice", filters=filters)
    sql, params = entries.query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET enable_seqscan = off")
            cursor.execute(f"EXPLAIN {sql}", params)
        else:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        plan = " ".join(str(row) for row in cursor.fetchall())
    index = "memory_entry_meta_containment" if connection.vendor == "postgresql" else "memory_entry_user_updated_live"
    assert index in plan


def test_a_filtered_search_sees_each_reads_own_moment(alice):
    """The same filter read at two moments: a memory expiring between them is found by the first read only,
    and by neither filter when the other one names another project."""
    from datetime import timedelta

    from django.utils import timezone

    from memories import selectors
    from memories.filters import EntryFilter
    from memories.models import MemoryEntry

    expires = timezone.now() + timedelta(hours=1)
    MemoryEntry.objects.filter(key="tabs").update(expires=expires)

    def found(moment, project: str = "apollo") -> list[str]:
        filters = EntryFilter(kinds=("preference",), meta=(("project", (project,)),), now=moment)
        return sorted(
            entry.key
            for entry in selectors.entry_find(owner=alice, uid="alice", query_text="uses", filters=filters)[:10]
        )

    assert found(expires - timedelta(minutes=1)) == ["editor", "tabs"]
    assert found(expires + timedelta(minutes=1)) == ["editor"]
    assert found(expires - timedelta(minutes=1)) == ["editor", "tabs"]
    assert found(expires - timedelta(minutes=1), project="gemini") == []
