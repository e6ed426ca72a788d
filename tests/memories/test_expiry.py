"""Expiry: a memory written with ttl or expires vanishes from every read when its time passes, a put
creates its key anew, and the worker deletes it with an "expire" event in its history."""

import io
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from memories import selectors, services
from memories.models import MemoryEntry, MemoryEvent
from memories.validation import EXPIRY_MAX_SECONDS
from memories.work import Worker, job_kinds, work_status

MEMORIES = "/api/v1/users/alice/memories/"


def _pass_expiry(uid: str, key: str) -> None:
    """What the clock does to an entry: its expiry is now behind it (the row stays until the worker runs)."""
    MemoryEntry.objects.filter(uid=uid, key=key).update(expires=timezone.now() - timedelta(seconds=1))


def _tool(client, **arguments) -> dict:
    return client.post("/api/v1/tool", arguments, format="json").json()


@pytest.fixture
def alice(owner):
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses vim", meta={"project": "apollo"})
    services.entry_put(owner=owner, uid="alice", key="mood", value="tired after the vim talk", ttl=3600)
    return owner


def test_a_put_with_ttl_sets_expires_that_far_ahead_and_get_shows_it(owner_api):
    before = timezone.now()
    response = owner_api.put(f"{MEMORIES}mood", {"value": "tired", "ttl": 60}, format="json")
    assert response.status_code == 201
    expires = parse_datetime(response.json()["expires"])
    assert expires is not None
    assert before + timedelta(seconds=60) <= expires <= timezone.now() + timedelta(seconds=60)
    assert owner_api.get(f"{MEMORIES}mood").json()["expires"] == response.json()["expires"]


def test_expires_sets_the_time_and_null_clears_it_while_leaving_both_out_keeps_it(owner_api):
    moment = (timezone.now() + timedelta(days=2)).replace(microsecond=0)
    created = owner_api.put(f"{MEMORIES}trip", {"value": "in Rome", "expires": moment.isoformat()}, format="json")
    assert parse_datetime(created.json()["expires"]) == moment
    kept = owner_api.put(f"{MEMORIES}trip", {"value": "in Rome, then Naples"}, format="json")
    assert parse_datetime(kept.json()["expires"]) == moment and kept.json()["version"] == 2
    cleared = owner_api.patch(f"{MEMORIES}trip", {"expires": None}, format="json")
    assert cleared.json()["expires"] is None and cleared.json()["version"] == 3
    refreshed = owner_api.patch(f"{MEMORIES}trip", {"ttl": 30}, format="json")
    assert refreshed.json()["expires"] is not None and refreshed.json()["version"] == 4


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"value": "x", "ttl": 0}, "ttl", f"must be 1 to {EXPIRY_MAX_SECONDS} seconds; got 0."),
        ({"value": "x", "ttl": EXPIRY_MAX_SECONDS + 1}, "ttl", f"must be 1 to {EXPIRY_MAX_SECONDS} seconds"),
        ({"value": "x", "ttl": "soon"}, "ttl", "A valid integer is required."),
        ({"value": "x", "expires": "2001-01-01T00:00:00Z"}, "expires", "must be in the future"),
        ({"value": "x", "expires": "2999-01-01T00:00:00Z"}, "expires", f"at most {EXPIRY_MAX_SECONDS} seconds ahead"),
        ({"value": "x", "ttl": 5, "expires": "2031-01-01T00:00:00Z"}, "ttl", "Give ttl or expires, not both."),
        ({"value": "x", "ttl": 5, "expires": None}, "ttl", "Give ttl or expires, not both."),
    ],
)
def test_a_bad_ttl_or_expires_is_a_400_naming_the_field_and_limit(owner_api, body, field, says):
    response = owner_api.put(f"{MEMORIES}mood", body, format="json")
    assert response.status_code == 400
    assert says in response.json()[field][0]
    assert not MemoryEntry.objects.exists()


def test_a_batch_takes_ttl_per_put_and_refuses_a_bad_one_by_its_index(owner, owner_api):
    ok = owner_api.post(
        f"{MEMORIES}batch",
        {"operations": [{"op": "put", "key": "a", "value": "1", "ttl": 60}, {"op": "put", "key": "b", "value": "2"}]},
        format="json",
    )
    assert ok.status_code == 200
    results = ok.json()["results"]
    assert results[0]["entry"]["expires"] is not None and results[1]["entry"]["expires"] is None
    bad = owner_api.post(
        f"{MEMORIES}batch",
        {"operations": [{"op": "put", "key": "c", "value": "3"}, {"op": "put", "key": "d", "value": "4", "ttl": -1}]},
        format="json",
    )
    assert bad.status_code == 400
    assert "ttl" in bad.json()["operations"]["1"]
    assert not MemoryEntry.objects.filter(key__in=["c", "d"]).exists()


def test_an_expired_memory_vanishes_from_every_read_at_once(alice, owner, owner_api, owner_client):
    before = owner_api.get("/api/v1/users/alice/context")
    assert "mood" in before.json()["text"]
    _pass_expiry("alice", "mood")

    assert owner_api.get(f"{MEMORIES}mood").status_code == 404
    assert [entry["key"] for entry in owner_api.get(MEMORIES).json()["results"]] == ["editor"]
    assert [entry["key"] for entry in owner_api.get(f"{MEMORIES}?q=vim").json()["results"]] == ["editor"]
    assert [entry["key"] for entry in owner_api.get(f"{MEMORIES}?q=vim&match=substring").json()["results"]] == [
        "editor"
    ]
    after = owner_api.get("/api/v1/users/alice/context")
    assert "mood" not in after.json()["text"] and after.json()["total"] == 1
    assert after["ETag"] != before["ETag"]
    assert owner_api.get("/api/v1/users/alice/context", HTTP_IF_NONE_MATCH=before["ETag"]).status_code == 200
    assert _tool(owner_api, action="get", uid="alice", key="mood") == {"ok": False, "error": "not found"}
    assert _tool(owner_api, action="query", uid="alice", query="vim")["count"] == 1
    assert [entry["key"] for entry in _tool(owner_api, action="list", uid="alice")["entries"]] == ["editor"]
    assert owner_api.get("/api/v1/users/").json()["results"][0]["entries"] == 1
    assert owner_api.get("/api/v1/info").json()["counts"]["entries"] == 1
    page = owner_client.get("/user/?uid=alice").content.decode()
    assert "editor" in page and "tired after the vim talk" not in page
    # The row is still there until the worker deletes it.
    assert MemoryEntry.objects.filter(key="mood").exists()


def test_the_owner_lists_its_expired_entries_with_include_expired(alice, owner_api, stranger_api):
    _pass_expiry("alice", "mood")
    listed = owner_api.get(f"{MEMORIES}?include_expired=1").json()["results"]
    assert sorted(entry["key"] for entry in listed) == ["editor", "mood"]
    assert owner_api.get(f"{MEMORIES}?include_expired=0").json()["count"] == 1
    assert stranger_api.get(f"{MEMORIES}?include_expired=1").json()["count"] == 0
    bad = owner_api.get(f"{MEMORIES}?include_expired=maybe")
    assert bad.status_code == 400 and "include_expired" in bad.json()


def test_a_put_on_an_expired_key_creates_it_anew_and_the_version_goes_on(alice, owner_api):
    _pass_expiry("alice", "mood")
    response = owner_api.put(f"{MEMORIES}mood", {"value": "rested"}, format="json")
    assert response.status_code == 201
    assert (response.json()["version"], response.json()["expires"]) == (2, None)
    actions = [event["action"] for event in owner_api.get(f"{MEMORIES}mood/history").json()["results"]]
    assert actions == ["create", "expire", "create"]


def test_a_patch_or_delete_of_an_expired_key_is_a_404(alice, owner_api):
    _pass_expiry("alice", "mood")
    assert owner_api.patch(f"{MEMORIES}mood", {"value": "x"}, format="json").status_code == 404
    assert owner_api.delete(f"{MEMORIES}mood").status_code == 404


def test_if_none_match_star_creates_over_an_expired_key(alice, owner_api):
    _pass_expiry("alice", "mood")
    response = owner_api.put(f"{MEMORIES}mood", {"value": "new"}, format="json", HTTP_IF_NONE_MATCH="*")
    assert response.status_code == 201


def test_the_worker_deletes_expired_entries_with_an_expire_event_and_no_actor(alice, owner):
    services.entry_put(owner=owner, uid="bob", key="plan", value="lunch at noon", ttl=60)
    _pass_expiry("alice", "mood")
    _pass_expiry("bob", "plan")
    assert work_status().waiting["expiry"] == 2

    lines: list[str] = []
    reports = Worker(job_kinds(["expiry"]), out=lines.append).run_once()

    assert reports["expiry"].done == 2 and lines == ["expiry: deleted 2 expired entries"]
    assert sorted(MemoryEntry.objects.values_list("key", flat=True)) == ["editor"]
    event = MemoryEvent.objects.filter(uid="alice", key="mood").order_by("-id").first()
    assert (event.action, event.actor_id, event.version) == (MemoryEvent.Action.EXPIRE, None, 1)
    assert (event.value_before, event.value_after) == ("tired after the vim talk", None)
    assert work_status().waiting["expiry"] == 0


def test_the_worker_leaves_entries_that_have_not_expired(alice):
    assert services.entries_expire() == 0
    assert MemoryEntry.objects.count() == 2


def test_work_once_names_the_expiry_kind(alice):
    _pass_expiry("alice", "mood")
    out = io.StringIO()
    call_command("work", "--once", "--kind", "expiry", stdout=out)
    assert "expiry: deleted 1 expired entries" in out.getvalue()


def test_the_tool_stores_with_ttl_and_refuses_a_bad_one(owner, owner_api):
    assert _tool(owner_api, action="store", uid="alice", key="mood", value="tired", ttl=120) == {
        "ok": True,
        "key": "mood",
    }
    assert selectors.entry_get(owner=owner, uid="alice", key="mood").expires is not None
    refused = _tool(owner_api, action="store", uid="alice", key="mood", value="tired", ttl=0)
    assert refused["ok"] is False and refused["error"].startswith("ttl: must be 1 to")


def test_export_leaves_expired_entries_out_unless_asked_and_import_keeps_expires(alice, owner, tmp_path: Path):
    services.entry_put(owner=owner, uid="alice", key="trip", value="in Rome", ttl=3600)
    _pass_expiry("alice", "mood")
    plain, everything = tmp_path / "plain.jsonl", tmp_path / "all.jsonl"
    call_command("export_memories", str(plain), stderr=io.StringIO())
    call_command("export_memories", str(everything), "--include-expired", stderr=io.StringIO())
    lines = [json.loads(line) for line in plain.read_text().splitlines()[1:]]
    assert sorted(line["key"] for line in lines) == ["editor", "trip"]
    assert len(everything.read_text().splitlines()) == 4
    trip = next(line for line in lines if line["key"] == "trip")
    stored = MemoryEntry.objects.get(key="trip").expires
    assert parse_datetime(trip["expires"]) == stored
    MemoryEntry.objects.all().delete()
    call_command("import_memories", str(plain), stdout=io.StringIO(), stderr=io.StringIO())
    assert MemoryEntry.objects.get(key="trip").expires == stored
    assert MemoryEntry.objects.get(key="editor").expires is None
