"""The Honcho backend's own promises, on the Honcho double through the real SDK."""

import socket

import pytest

from honcho_double import Fault, HonchoDouble
from memories.backends.base import BackendError
from memories.backends.honcho import HonchoBackend, HonchoConfig, HonchoRecord, HonchoStore, peer_id
from tests.support.honcho import TEST_WORKSPACE, double_config, honcho_backend_for


def messages_of(double: HonchoDouble) -> list[str]:
    return [message["content"] for session in double.sessions(TEST_WORKSPACE) for message in session["messages"]]


def store_on(double: HonchoDouble) -> HonchoStore:
    return HonchoStore(double_config(), http_client=double.http_client())


def test_an_entry_is_one_session_holding_the_whole_record_and_one_message_per_value(owner, honcho_double):
    backend = honcho_backend_for(owner, honcho_double)
    backend.put("alice", "editor", "vim", meta={"deep": {"a": {"b": {"c": {"d": {"e": 1}}}}}})
    backend.put("alice", "editor", "helix")
    (session,) = honcho_double.sessions(TEST_WORKSPACE)
    metadata = session["metadata"]
    assert (metadata["mh_uid"], metadata["mh_key"], metadata["mh_value"], metadata["mh_version"]) == (
        "alice",
        "editor",
        "helix",
        2,
    )
    assert metadata["mh_meta"] == '{"deep":{"a":{"b":{"c":{"d":{"e":1}}}}}}'
    assert messages_of(honcho_double) == ["editor: vim", "editor: helix"]


def test_a_replayed_upsert_writes_no_second_message(owner, honcho_double):
    store = store_on(honcho_double)
    record = HonchoRecord(owner_id=owner.pk, uid="alice", key="editor", value="vim", version=3)
    first = store.upsert(record, session_id="mh-fixed")
    replay = store.upsert(record, session_id="mh-fixed")
    assert (first.message_written, replay.message_written) == (True, False)
    assert messages_of(honcho_double) == ["editor: vim"]


def test_an_upsert_whose_reply_was_lost_is_safe_to_replay(owner, honcho_double):
    store = store_on(honcho_double)
    record = HonchoRecord(owner_id=owner.pk, uid="alice", key="editor", value="vim")
    store.upsert(record, session_id="mh-fixed")
    changed = HonchoRecord(owner_id=owner.pk, uid="alice", key="editor", value="emacs", version=2)
    honcho_double.faults.fail_next.extend(
        [None, None, Fault.DROPPED_CONNECTION]
    )  # the message lands, its reply is lost
    with pytest.raises(BackendError) as lost:
        store.upsert(changed, session_id="mh-fixed")
    assert lost.value.retryable is True
    store.upsert(changed, session_id="mh-fixed")
    assert messages_of(honcho_double) == ["editor: vim", "editor: emacs"]


def test_deleting_what_honcho_no_longer_holds_is_not_an_error(owner, honcho_double):
    store = store_on(honcho_double)
    store.upsert(HonchoRecord(owner_id=owner.pk, uid="alice", key="editor", value="vim"), session_id="mh-gone")
    assert store.delete_session("mh-gone") is True
    assert store.delete_session("mh-gone") is False
    assert store.delete(owner.pk, "alice", "editor") is False


def test_accounts_and_awkward_uids_get_separate_valid_peers(owner, stranger):
    assert peer_id(owner.pk, "alice") != peer_id(stranger.pk, "alice")
    hashed = peer_id(owner.pk, "discord:1234")
    assert hashed.startswith(f"mh-o{owner.pk}-h-") and hashed != peer_id(owner.pk, "discord_1234")
    assert peer_id(owner.pk, "x" * 600).startswith(f"mh-o{owner.pk}-h-")


def test_a_value_longer_than_a_message_is_kept_whole_in_the_record(owner, honcho_double):
    backend = honcho_backend_for(owner, honcho_double)
    backend.put("alice", "essay", "w" * 30_000)
    assert backend.get("alice", "essay").value == "w" * 30_000
    assert len(messages_of(honcho_double)[0]) == 25_000


@pytest.mark.parametrize(
    ("fault", "retryable", "status", "words"),
    [
        (Fault.UNAUTHORIZED, False, 401, "refused the API key (401)"),
        (Fault.SERVER_ERROR, True, 500, "failed (500)"),
        (Fault.TIMEOUT, True, 0, "did not answer within 2 s"),
        (Fault.DROPPED_CONNECTION, True, 0, "could not reach"),
        (Fault.UNREACHABLE, True, 0, "could not reach"),
    ],
)
def test_each_failure_is_one_backend_error_saying_whether_to_retry(
    owner, honcho_double, fault, retryable, status, words
):
    backend = honcho_backend_for(owner, honcho_double)
    backend.put("alice", "editor", "vim")
    honcho_double.faults.fail_next.append(fault)
    with pytest.raises(BackendError) as failure:
        backend.get("alice", "editor")
    assert (failure.value.retryable, failure.value.status) == (retryable, status)
    assert words in failure.value.message


def test_with_max_retries_0_a_failure_costs_one_call(owner, honcho_double):
    backend = honcho_backend_for(owner, honcho_double)
    backend.put("alice", "editor", "vim")
    honcho_double.faults.fail(1.0, kinds=(Fault.SERVER_ERROR,))
    calls_before = len(honcho_double.calls)
    with pytest.raises(BackendError):
        backend.get("alice", "editor")
    assert len(honcho_double.calls) == calls_before + 1


def test_a_wrong_api_key_makes_it_unavailable_with_the_reason(owner):
    double = HonchoDouble(api_key="the-right-key")
    backend = HonchoBackend(owner=owner, config=double_config(api_key="a-wrong-key"), http_client=double.http_client())
    availability = backend.available()
    assert availability.ok is False
    assert "refused the API key (401)" in availability.reason


def test_unconfigured_honcho_is_unavailable_without_a_call(owner):
    config = HonchoConfig(base_url="http://127.0.0.1:9", api_key="", workspace_id="w", timeout=1.0, configured=False)
    double = HonchoDouble()
    availability = HonchoBackend(owner=owner, config=config, http_client=double.http_client()).available()
    assert availability.ok is False
    assert "not configured" in availability.reason
    assert double.calls == []


def test_a_refused_connection_makes_it_unavailable_with_the_reason(owner):
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        closed_port = placeholder.getsockname()[1]
    backend = HonchoBackend(owner=owner, config=double_config(f"http://127.0.0.1:{closed_port}"))
    availability = backend.available()
    backend.close()
    assert availability.ok is False
    assert f"could not reach Honcho at http://127.0.0.1:{closed_port}" in availability.reason


def test_it_works_over_real_http_against_the_double_served_on_loopback(owner):
    double = HonchoDouble(api_key="test-key")
    with double.running() as base_url:
        backend = HonchoBackend(owner=owner, config=double_config(base_url))
        try:
            assert backend.available().ok is True
            backend.put("alice", "editor", "vim")
            assert backend.get("alice", "editor").value == "vim"
            assert [entry.key for entry in backend.find("alice", "VIM")] == ["editor"]
            assert backend.delete("alice", "editor") is True
        finally:
            backend.close()
    assert backend.is_cloud is True
    assert {call.status for call in double.calls} <= {200, 201, 202}


def test_a_rate_limit_is_retryable_and_carries_retry_after(owner, honcho_double):
    honcho_double.retry_after = 7
    backend = honcho_backend_for(owner, honcho_double)
    honcho_double.faults.fail_next.append(Fault.RATE_LIMITED)
    with pytest.raises(BackendError) as failure:
        backend.get("alice", "editor")
    assert (failure.value.retryable, failure.value.status, failure.value.retry_after) == (True, 429, 7.0)


def test_all_records_holds_every_accounts_entries_for_a_reconciliation(owner, stranger, honcho_double):
    honcho_backend_for(owner, honcho_double).put("alice", "editor", "vim")
    honcho_backend_for(stranger, honcho_double).put("bob", "shell", "zsh")
    found = store_on(honcho_double).all_records()
    assert sorted((entry.record.owner_id, entry.record.key) for entry in found) == sorted(
        [(owner.pk, "editor"), (stranger.pk, "shell")]
    )
