"""Privacy classes: a write takes the account's default, history records the class, and local entries
never get a remote vector while the local model may embed them."""

import pytest

from memories import selectors, services
from memories.embeddings.store import embeddings_pending_count, embeddings_process_pending, embeddings_reembed
from memories.models import EntryEmbedding, MemoryEntry
from memories.validation import InvalidField


def test_a_write_without_privacy_takes_the_account_default(owner, stranger):
    services.account_policy_set(account=owner, default_privacy="local")

    mine = services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma").entry
    theirs = services.entry_put(owner=stranger, uid="alice", key="diagnosis", value="asthma").entry
    named = services.entry_put(owner=owner, uid="alice", key="editor", value="vim", privacy="shared").entry

    assert (mine.privacy, theirs.privacy, named.privacy) == ("local", "shared", "shared")


def test_an_update_without_privacy_keeps_the_class_and_one_with_it_changes_it(owner):
    services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma", privacy="local")
    services.account_policy_set(account=owner, default_privacy="shared")

    kept = services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma, mild").entry
    assert kept.privacy == "local"
    changed = services.entry_update(owner=owner, uid="alice", key="diagnosis", privacy="shared")
    assert changed.changed and changed.entry.privacy == "shared" and changed.entry.version == 3
    latest = selectors.entry_history(owner=owner, uid="alice", key="diagnosis").first()
    assert (latest.privacy_before, latest.privacy_after, latest.value_before, latest.value_after) == (
        "local",
        "shared",
        "asthma, mild",
        "asthma, mild",
    )


def test_an_unknown_privacy_is_refused_naming_the_field_and_writes_nothing(owner):
    with pytest.raises(InvalidField) as refused:
        services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma", privacy="secret")

    assert refused.value.field == "privacy"
    assert "local, shared" in refused.value.message
    assert not MemoryEntry.objects.exists()


def test_a_restored_entry_keeps_its_privacy(owner):
    services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma", privacy="local")
    services.entry_delete(owner=owner, uid="alice", key="diagnosis")

    restored = services.entry_restore(owner=owner, uid="alice", key="diagnosis")

    assert restored.privacy == "local"


def test_a_batch_names_privacy_per_operation_and_refuses_a_bad_one(owner):
    outcomes = services.entries_batch(
        owner=owner,
        uid="alice",
        operations=[
            services.BatchOperation(op="put", key="diagnosis", value="asthma", privacy="local"),
            services.BatchOperation(op="put", key="editor", value="vim"),
        ],
    )
    assert [outcome.entry.privacy for outcome in outcomes] == ["local", "shared"]

    with pytest.raises(services.BatchRejected) as rejected:
        services.entries_batch(
            owner=owner,
            uid="alice",
            operations=[services.BatchOperation(op="put", key="editor", value="emacs", privacy="public")],
        )
    assert "privacy" in rejected.value.errors[0]
    assert selectors.entry_get(owner=owner, uid="alice", key="editor").value == "vim"


def test_an_import_takes_the_class_of_each_record_and_the_default_without_one(owner):
    services.account_policy_set(account=owner, default_privacy="local")
    services.entries_import(
        owner=owner,
        records=[
            services.ImportRecord(uid="alice", key="diagnosis", value="asthma", privacy="local"),
            services.ImportRecord(uid="alice", key="editor", value="vim", privacy="shared"),
            services.ImportRecord(uid="alice", key="shell", value="fish"),
        ],
    )
    privacy = dict(MemoryEntry.objects.values_list("key", "privacy"))
    assert privacy == {"diagnosis": "local", "editor": "shared", "shell": "local"}

    counts = services.entries_import(
        owner=owner, records=[services.ImportRecord(uid="alice", key="editor", value="vim", privacy="local")]
    )
    assert counts.updated == 1
    assert selectors.entry_get(owner=owner, uid="alice", key="editor").privacy == "local"


# Embeddings ----------------------------------------------------------------------------------------


def test_the_remote_provider_never_receives_a_local_entry(owner, remote_embeddings):
    services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma", privacy="local")
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")

    assert embeddings_pending_count() == 1
    assert embeddings_process_pending(limit=10) == 1
    assert remote_embeddings.texts() == ["editor: vim"]
    assert not EntryEmbedding.objects.filter(entry__key="diagnosis").exists()


def test_an_entry_made_local_loses_its_remote_vector_and_is_never_sent_again(owner, remote_embeddings):
    services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma")
    embeddings_process_pending()
    assert EntryEmbedding.objects.filter(entry__key="diagnosis", vector__isnull=False).exists()

    services.entry_update(owner=owner, uid="alice", key="diagnosis", value="asthma, severe", privacy="local")
    embeddings_process_pending()
    assert embeddings_reembed() == 0
    embeddings_process_pending()

    assert not EntryEmbedding.objects.filter(entry__key="diagnosis").exists()
    assert "diagnosis: asthma, severe" not in remote_embeddings.texts()


def test_a_local_entry_made_while_the_local_model_ran_is_not_sent_after_a_switch(owner, settings, remote_embeddings):
    settings.MEMORYHUB_EMBEDDINGS = "local"
    services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma", privacy="local")
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    embeddings_process_pending()
    # the local model embeds local entries: nothing left the machine
    assert EntryEmbedding.objects.filter(entry__key="diagnosis", vector__isnull=False).exists()
    assert remote_embeddings.requests == []

    settings.MEMORYHUB_EMBEDDINGS = "openai"
    assert embeddings_reembed() == 1
    embeddings_process_pending()

    assert remote_embeddings.texts() == ["editor: vim"]
    assert not EntryEmbedding.objects.filter(entry__key="diagnosis").exists()


def test_a_pending_local_entry_is_dropped_not_sent_when_the_provider_turns_remote(owner, settings, remote_embeddings):
    settings.MEMORYHUB_EMBEDDINGS = "local"
    services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma", privacy="local")
    settings.MEMORYHUB_EMBEDDINGS = "openai"

    assert embeddings_process_pending() == 0

    assert remote_embeddings.requests == []
    assert embeddings_pending_count() == 0
