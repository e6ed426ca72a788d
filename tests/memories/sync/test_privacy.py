"""Local entries never reach Honcho: no task, no push; an entry made local has its session deleted;
reconcile counts local entries found among Honcho's sessions."""

import json
import secrets
from random import Random

import pytest
from django.utils import timezone

from honcho_double import HonchoDouble
from memories import services
from memories.backends.honcho import HonchoStore
from memories.embeddings.store import embeddings_process_pending
from memories.models import MemoryEntry, SyncTask
from memories.sync.worker import reconcile, reconciliation_fix
from tests.support.honcho import double_config
from tests.support.sync import sessions_by_id

pytestmark = pytest.mark.usefixtures("sync_on")


def sent(double: HonchoDouble) -> str:
    """Everything the hub sent to Honcho, paths, queries and bodies, as one text to search."""
    return "\n".join(
        f"{call.method} {call.path} {json.dumps(call.query)} {json.dumps(call.body, ensure_ascii=False)}"
        for call in double.calls
    )


def test_a_local_entry_queues_no_task_and_never_reaches_honcho(owner, honcho_double, worker):
    services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma", privacy="local")
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma, mild")
    services.entry_delete(owner=owner, uid="alice", key="diagnosis")

    assert list(SyncTask.objects.values_list("key", flat=True)) == ["editor"]
    assert worker.drain().pushed == 1
    assert "diagnosis" not in sent(honcho_double) and "asthma" not in sent(honcho_double)


def test_an_entry_made_local_has_its_honcho_session_deleted(owner, honcho_double, worker):
    entry = services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma").entry
    worker.drain()
    old_session = entry.honcho_session_id
    assert old_session in sessions_by_id(honcho_double)

    changed = services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma, severe", privacy="local")
    assert changed.entry.honcho_session_id != old_session
    assert SyncTask.objects.get(session_id=old_session).operation == SyncTask.Operation.DELETE
    worker.drain()
    honcho_double.purge()

    assert sessions_by_id(honcho_double) == {}
    assert "severe" not in sent(honcho_double)
    assert not SyncTask.objects.filter(session_id=changed.entry.honcho_session_id).exists()


def test_an_entry_made_shared_again_is_pushed_under_a_new_session(owner, honcho_double, worker):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    worker.drain()
    services.entry_update(owner=owner, uid="alice", key="editor", privacy="local")
    worker.drain()
    entry = services.entry_update(owner=owner, uid="alice", key="editor", privacy="shared").entry
    worker.drain()
    honcho_double.purge()

    sessions = sessions_by_id(honcho_double)
    assert list(sessions) == [entry.honcho_session_id]
    assert sessions[entry.honcho_session_id]["messages"][-1]["content"] == "editor: vim"


def test_a_push_finds_the_entry_local_and_deletes_instead(owner, honcho_double, worker):
    entry = services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma").entry
    # made local by a path that left the task as it was (a row changed outside the services)
    MemoryEntry.objects.filter(pk=entry.pk).update(privacy="local")

    worker.drain()

    assert "asthma" not in sent(honcho_double)
    assert sessions_by_id(honcho_double) == {}


def test_making_an_entry_local_while_sync_is_off_still_deletes_the_session_it_had(
    owner, honcho_double, worker, settings
):
    entry = services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma").entry
    worker.drain()
    settings.MEMORYHUB_HONCHO_SYNC = False

    services.entry_update(owner=owner, uid="alice", key="diagnosis", privacy="local")
    worker.drain()  # what `honcho_sync --once` drains while sync is off
    honcho_double.purge()

    assert entry.honcho_session_id not in sessions_by_id(honcho_double)


def test_reconcile_counts_local_entries_among_honchos_sessions_and_fix_deletes_them(owner, honcho_double, worker):
    services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma")
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    worker.drain()
    services.entry_update(owner=owner, uid="alice", key="diagnosis", privacy="local")
    SyncTask.objects.filter(key="diagnosis").delete()  # the delete lost: what reconcile is for
    store = HonchoStore(double_config(), http_client=honcho_double.http_client())
    try:
        found = reconcile(store)
        assert (found.count("local"), found.count("missing"), found.count("extra")) == (1, 0, 0)

        assert reconciliation_fix(found, now=timezone.now()) == 1
        worker.drain()
        honcho_double.purge()
        again = reconcile(store)
    finally:
        store.close()
    assert (again.count("local"), again.count("missing"), again.count("stale"), again.count("extra")) == (0, 0, 0, 0)


@pytest.mark.slow
def test_a_thousand_mixed_writes_send_no_local_entry_to_honcho_or_the_embeddings_endpoint(
    owner, stranger, honcho_double, worker, remote_embeddings
):
    writes = Random(16)
    services.account_policy_set(account=stranger, default_privacy="local")
    local: dict[str, str] = {}  # key -> value, for every entry that was local from its first write
    shared: dict[str, str] = {}
    batch: dict[str, list[services.BatchOperation]] = {}
    imports: list[services.ImportRecord] = []
    for number in range(1000):
        account = owner if number % 4 else stranger  # the stranger's writes are local by default
        is_local = account is stranger or writes.random() < 0.3
        key = f"{'private' if is_local else 'public'}_{number}_{secrets.token_hex(4)}"
        value = f"{'secret' if is_local else 'open'} value {number} {secrets.token_hex(6)}"
        (local if is_local else shared)[key] = value
        uid = f"user{writes.randrange(8)}"
        named = ("local" if is_local else "shared") if account is owner else None
        route = number % 10
        if route == 1 and account is owner:
            batch.setdefault(uid, []).append(services.BatchOperation(op="put", key=key, value=value, privacy=named))
        elif route == 2 and account is owner:
            imports.append(services.ImportRecord(uid=uid, key=key, value=value, privacy=named))
        else:
            services.entry_put(owner=account, uid=uid, key=key, value=value, privacy=named)
    for uid, operations in batch.items():
        services.entries_batch(owner=owner, uid=uid, operations=operations)
    services.entries_import(owner=owner, records=imports)
    worker.drain()
    while embeddings_process_pending():
        pass

    # 100 shared entries made local with a new value, 50 local ones made shared
    made_local = dict(writes.sample(sorted(shared.items()), 100))
    made_shared = dict(writes.sample(sorted(local.items()), 50))
    private_values = {key: f"now private {secrets.token_hex(6)}" for key in made_local}
    for entry in MemoryEntry.objects.filter(key__in=[*made_local, *made_shared]).select_related("owner"):
        if entry.key in made_local:
            services.entry_put(
                owner=entry.owner, uid=entry.uid, key=entry.key, value=private_values[entry.key], privacy="local"
            )
        else:
            services.entry_update(owner=entry.owner, uid=entry.uid, key=entry.key, privacy="shared")
    report = worker.drain()
    while embeddings_process_pending():
        pass
    assert report.failed == 0

    to_honcho, to_embeddings = sent(honcho_double), "\n".join(remote_embeddings.texts())
    never_shared = {key: value for key, value in local.items() if key not in made_shared}
    assert len(never_shared) > 300
    leaked = [
        key
        for key, value in never_shared.items()
        if key in to_honcho or value in to_honcho or key in to_embeddings or value in to_embeddings
    ]
    leaked += [key for key, value in private_values.items() if value in to_honcho or value in to_embeddings]
    assert leaked == []
    for key, value in [*shared.items(), *made_shared.items()]:
        if key not in made_local:
            assert value in to_honcho, key
            assert f"{key.replace('_', ' ')}: {value}" in to_embeddings, key
    honcho_double.purge()
    held = {session["metadata"].get("mh_key") for session in honcho_double.sessions("memoryhub-tests")}
    assert held.isdisjoint(never_shared) and held.isdisjoint(made_local)
    final_shared = MemoryEntry.objects.filter(privacy="shared").count()
    assert final_shared == len(shared) - 100 + 50 and len(held) == final_shared
