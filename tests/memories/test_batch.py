"""POST /api/v1/users/{uid}/memories/batch: many puts and deletes, all applied or none."""

import pytest

from memories import selectors, services
from memories.models import MemoryEvent

BATCH_URL = "/api/v1/users/alice/memories/batch"


def _keys(owner) -> list[str]:
    return sorted(entry.key for entry in selectors.entry_list(owner=owner, uid="alice"))


def test_a_batch_applies_puts_and_deletes_in_order_and_reports_each(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="old", value="to go")
    services.entry_put(owner=owner, uid="alice", key="same", value="kept")
    operations = [
        {"op": "put", "key": "language", "value": "Python", "kind": "fact", "meta": {"source": "chat"}},
        {"op": "put", "key": "language", "value": "Rust"},
        {"op": "put", "key": "same", "value": "kept"},
        {"op": "delete", "key": "old"},
        {"op": "delete", "key": "never-there"},
    ]
    response = owner_api.post(BATCH_URL, {"operations": operations}, format="json")
    assert response.status_code == 200
    assert [item["status"] for item in response.json()["results"]] == [
        "created",
        "updated",
        "unchanged",
        "deleted",
        "absent",
    ]
    entry = selectors.entry_get(owner=owner, uid="alice", key="language")
    assert (entry.value, entry.kind, entry.meta, entry.version) == ("Rust", "fact", {"source": "chat"}, 2)
    assert _keys(owner) == ["language", "same"]
    assert MemoryEvent.objects.filter(owner=owner, key="language").count() == 2


def test_one_invalid_operation_applies_none_and_names_the_field_and_limit(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="keep", value="me")
    operations = [
        {"op": "put", "key": "fine", "value": "ok"},
        {"op": "delete", "key": "keep"},
        {"op": "put", "key": "k" * 300, "value": "too long a key"},
    ]
    response = owner_api.post(BATCH_URL, {"operations": operations}, format="json")
    assert response.status_code == 400
    errors = response.json()["operations"]
    assert list(errors) == ["2"]
    assert "255" in errors["2"]["key"][0]
    assert _keys(owner) == ["keep"]
    assert MemoryEvent.objects.filter(owner=owner).count() == 1


def test_a_stale_expected_version_rolls_back_the_operations_before_it(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="drink", value="tea")
    operations = [
        {"op": "put", "key": "food", "value": "rice"},
        {"op": "put", "key": "drink", "value": "coffee", "expected_version": 7},
    ]
    response = owner_api.post(BATCH_URL, {"operations": operations}, format="json")
    assert response.status_code == 400
    assert "version is 1" in response.json()["operations"]["1"]["expected_version"][0]
    assert _keys(owner) == ["drink"]
    assert selectors.entry_get(owner=owner, uid="alice", key="drink").value == "tea"


def test_every_stale_expected_version_is_named_each_against_the_operations_before_it(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="drink", value="tea")
    services.entry_put(owner=owner, uid="alice", key="food", value="rice")
    operations = [
        {"op": "put", "key": "drink", "value": "coffee", "expected_version": 7},
        {"op": "put", "key": "food", "value": "bread", "expected_version": 1},
        # food is at 2 after the operation before: this one holds
        {"op": "put", "key": "food", "value": "pasta", "expected_version": 2},
        {"op": "delete", "key": "food", "expected_version": 2},
        {"op": "delete", "key": "never-there", "expected_version": 5},
    ]
    response = owner_api.post(BATCH_URL, {"operations": operations}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "operations": {
            "0": {"expected_version": ["current version is 1"]},
            "3": {"expected_version": ["current version is 3"]},
            "4": {"expected_version": ["the entry does not exist"]},
        }
    }
    assert [(entry.key, entry.value) for entry in selectors.entry_list(owner=owner, uid="alice").order_by("key")] == [
        ("drink", "tea"),
        ("food", "rice"),
    ]


@pytest.mark.parametrize(
    ("second", "named"),
    [
        # Once the first is fixed (to 2), the key is at 3: the second's 3 is right, its 2 is not.
        (3, {"0": {"expected_version": ["current version is 2"]}}),
        (
            2,
            {
                "0": {"expected_version": ["current version is 2"]},
                "1": {"expected_version": ["current version is 3"]},
            },
        ),
    ],
)
def test_an_operation_after_a_stale_one_on_its_key_is_judged_as_it_will_be_once_that_one_is_fixed(
    owner, owner_api, second, named
):
    services.entry_put(owner=owner, uid="alice", key="k", value="one")
    services.entry_put(owner=owner, uid="alice", key="k", value="two")
    operations = [
        {"op": "put", "key": "k", "value": "three", "expected_version": 1},
        {"op": "put", "key": "k", "value": "four", "expected_version": second},
    ]

    refused = owner_api.post(BATCH_URL, {"operations": operations}, format="json")

    assert (refused.status_code, refused.json()) == (400, {"operations": named})
    assert selectors.entry_get(owner=owner, uid="alice", key="k").version == 2
    # Fixed as the 400 says, the batch goes through.
    fixed = [{**operations[0], "expected_version": 2}, {**operations[1], "expected_version": 3}]
    assert owner_api.post(BATCH_URL, {"operations": fixed}, format="json").status_code == 200
    assert selectors.entry_get(owner=owner, uid="alice", key="k").version == 4


def test_a_put_without_a_value_is_refused(owner_api):
    response = owner_api.post(BATCH_URL, {"operations": [{"op": "put", "key": "k"}]}, format="json")
    assert response.status_code == 400
    assert "value" in response.json()["operations"]["0"]


def test_more_than_500_operations_are_refused_naming_the_limit(owner, owner_api):
    operations = [{"op": "put", "key": f"k{number}", "value": "v"} for number in range(501)]
    response = owner_api.post(BATCH_URL, {"operations": operations}, format="json")
    assert response.status_code == 400
    assert "500" in str(response.json()["operations"])
    assert _keys(owner) == []


def test_an_empty_batch_is_refused(owner_api):
    response = owner_api.post(BATCH_URL, {"operations": []}, format="json")
    assert response.status_code == 400


@pytest.mark.slow
def test_500_operations_are_applied_together(owner, owner_api):
    operations = [{"op": "put", "key": f"k{number}", "value": "v"} for number in range(500)]
    response = owner_api.post(BATCH_URL, {"operations": operations}, format="json")
    assert response.status_code == 200
    assert len(_keys(owner)) == 500


def test_an_entry_whose_key_is_batch_is_still_read_written_and_deleted(owner, owner_api):
    assert owner_api.put(BATCH_URL, {"value": "a key named batch"}, format="json").status_code == 201
    assert owner_api.get(BATCH_URL).json()["value"] == "a key named batch"
    assert owner_api.patch(BATCH_URL, {"value": "changed"}, format="json").json()["value"] == "changed"
    assert owner_api.delete(BATCH_URL).status_code == 204
    assert owner_api.get(BATCH_URL).status_code == 404


def test_a_batch_touches_only_the_callers_entries(owner, stranger, stranger_api):
    services.entry_put(owner=owner, uid="alice", key="drink", value="tea")
    response = stranger_api.post(BATCH_URL, {"operations": [{"op": "delete", "key": "drink"}]}, format="json")
    assert response.json()["results"][0]["status"] == "absent"
    assert _keys(owner) == ["drink"]


def test_a_batch_needs_credentials(anonymous_api):
    response = anonymous_api.post(BATCH_URL, {"operations": [{"op": "delete", "key": "x"}]}, format="json")
    assert response.status_code in (401, 403)


def test_the_batch_service_checks_every_operation_itself(owner):
    operations = [
        services.BatchOperation(op="put", key="fine", value="ok"),
        services.BatchOperation(op="put", key="bad", value="nul\x00"),
        services.BatchOperation(op="rename", key="x"),
    ]
    with pytest.raises(services.BatchRejected) as rejected:
        services.entries_batch(owner=owner, uid="alice", operations=operations)
    assert set(rejected.value.errors) == {1, 2}
    assert "value" in rejected.value.errors[1] and "op" in rejected.value.errors[2]
    assert _keys(owner) == []


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "rename", "key": "k"},
        {"op": "put", "key": "k"},
        {"op": "put", "key": "k", "value": "v", "expected_version": 0},
        {"op": "delete", "key": "k" * 300, "expected_version": -1},
        {"op": "put", "key": "", "value": "v", "kind": "no spaces", "meta": [1]},
    ],
)
def test_the_service_refuses_an_operation_in_the_apis_own_words(owner, owner_api, operation):
    response = owner_api.post(BATCH_URL, {"operations": [operation]}, format="json")
    with pytest.raises(services.BatchRejected) as rejected:
        services.entries_batch(owner=owner, uid="alice", operations=[services.BatchOperation(**operation)])
    assert response.status_code == 400
    assert response.json()["operations"] == {"0": rejected.value.errors[0]}


def test_a_delete_that_names_a_value_or_kind_is_refused_and_nothing_changes(owner, owner_api):
    services.entry_put(owner=owner, uid="alice", key="a", value="kept")
    body = {"operations": [{"op": "delete", "key": "a", "value": "x", "kind": "note"}]}

    response = owner_api.post("/api/v1/users/alice/memories/batch", body, format="json")

    assert response.status_code == 400
    message = "is no field of a delete; it takes op, key, expected_version."
    assert response.json() == {"operations": {"0": {"value": [message], "kind": [message]}}}
    assert selectors.entry_get(owner=owner, uid="alice", key="a").value == "kept"
    plain = owner_api.post(
        "/api/v1/users/alice/memories/batch",
        {"operations": [{"op": "delete", "key": "a", "expected_version": 1}]},
        format="json",
    )
    assert plain.status_code == 200 and plain.json()["results"][0]["status"] == "deleted"
