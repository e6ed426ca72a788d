"""Vectors in the database: writes mark work, the worker embeds it, search reads one user's vectors."""

import threading

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction

from memories import services
from memories.embeddings import get_provider, store
from memories.embeddings.jobs import EmbeddingJob, EmbedReport
from memories.embeddings.store import embeddings_pending_count, embeddings_process_pending, embeddings_reembed
from memories.models import EntryEmbedding
from memories.search.vectors import semantic_ranked
from memories.services import ImportRecord


@pytest.fixture(autouse=True)
def _local_embeddings(settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "local"


def _nearest(owner, uid: str, question: str) -> list[str]:
    provider = get_provider()
    ranked = semantic_ranked(
        owner=owner, uid=uid, model=provider.name, query_vector=provider.embed([question])[0], limit=3
    )
    keys = dict(
        EntryEmbedding.objects.filter(entry_id__in=[i for i, _ in ranked]).values_list("entry_id", "entry__key")
    )
    return [keys[entry_id] for entry_id, _ in ranked]


def test_a_write_marks_its_entry_pending_and_the_worker_embeds_it(owner) -> None:
    entry = services.entry_put(owner=owner, uid="alice", key="allergy", value="allergic to peanuts").entry
    row = EntryEmbedding.objects.get(entry=entry)
    assert row.pending and row.vector is None and row.wanted_version == 1

    assert embeddings_process_pending(limit=10) == 1
    row.refresh_from_db()
    assert not row.pending and row.embedded_version == 1 and row.model == get_provider().name
    vector = np.frombuffer(bytes(row.vector), dtype="<f4")
    assert vector.shape == (row.dimension,) and np.isclose(np.linalg.norm(vector), 1.0, atol=1e-5)
    assert embeddings_process_pending(limit=10) == 0


def test_a_changed_value_is_embedded_again_and_a_kind_change_is_not(owner) -> None:
    services.entry_put(owner=owner, uid="alice", key="pet", value="has a cat")
    embeddings_process_pending()
    services.entry_put(owner=owner, uid="alice", key="pet", value="has a cat", kind="fact")
    assert embeddings_pending_count() == 0
    services.entry_put(owner=owner, uid="alice", key="pet", value="has a golden retriever called Miso")
    assert embeddings_pending_count() == 1
    embeddings_process_pending()
    assert _nearest(owner, "alice", "what kind of dog")[0] == "pet"


def test_a_change_made_while_the_worker_embeds_stays_pending(owner, monkeypatch: pytest.MonkeyPatch) -> None:
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses emacs")
    provider = get_provider()
    real_embed = provider.embed

    def embed_while_the_user_writes(texts: list[str], **kwargs: object) -> np.ndarray:
        services.entry_put(owner=owner, uid="alice", key="editor", value="switched to vim")
        return real_embed(texts)

    monkeypatch.setattr(provider, "embed", embed_while_the_user_writes)
    assert embeddings_process_pending() == 0  # the vector of "uses emacs" is not stored over the newer text
    monkeypatch.undo()
    row = EntryEmbedding.objects.get(entry__key="editor")
    assert row.pending and row.wanted_version == 2
    assert embeddings_process_pending() == 1
    row.refresh_from_db()
    assert row.embedded_version == 2


def test_deleting_an_entry_or_forgetting_a_user_removes_their_vectors(owner) -> None:
    services.entry_put(owner=owner, uid="alice", key="a", value="likes tea")
    services.entry_put(owner=owner, uid="bob", key="b", value="likes coffee")
    services.entry_put(owner=owner, uid="bob", key="c", value="likes cocoa")
    embeddings_process_pending()
    services.entry_delete(owner=owner, uid="alice", key="a")
    services.user_forget(owner=owner, uid="bob")
    assert EntryEmbedding.objects.count() == 0


def test_an_import_marks_created_and_changed_entries(owner) -> None:
    services.entry_put(owner=owner, uid="alice", key="old", value="first text")
    embeddings_process_pending()
    records = [
        ImportRecord(uid="alice", key="old", value="second text"),
        ImportRecord(uid="alice", key="new", value="a new memory"),
    ]
    services.entries_import(owner=owner, records=records)
    assert sorted(EntryEmbedding.objects.filter(pending=True).values_list("entry__key", flat=True)) == ["new", "old"]
    assert embeddings_process_pending() == 2


def test_with_embeddings_off_a_write_marks_nothing(owner, settings, django_assert_num_queries) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "off"
    services.entry_put(owner=owner, uid="alice", key="a", value="x")
    assert EntryEmbedding.objects.count() == 0
    assert embeddings_process_pending() == 0


def test_reembed_catches_up_entries_written_while_off_and_vectors_of_another_model(owner, settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "off"
    services.entry_put(owner=owner, uid="alice", key="off", value="written while embeddings were off")
    settings.MEMORYHUB_EMBEDDINGS = "local"
    services.entry_put(owner=owner, uid="alice", key="on", value="written with embeddings on")
    embeddings_process_pending()
    EntryEmbedding.objects.filter(entry__key="on").update(model="an-older-model")
    assert embeddings_reembed() == 2
    assert embeddings_process_pending() == 2
    assert set(EntryEmbedding.objects.values_list("model", flat=True)) == {get_provider().name}


def test_semantic_search_reads_only_the_asking_accounts_user(owner, stranger) -> None:
    services.entry_put(owner=owner, uid="alice", key="diet", value="vegetarian, eats no meat or fish")
    services.entry_put(owner=owner, uid="alice", key="os", value="runs Debian on a ThinkPad")
    services.entry_put(owner=owner, uid="bob", key="diet", value="eats no meat")
    services.entry_put(owner=stranger, uid="alice", key="diet", value="eats no meat at all")
    embeddings_process_pending()
    nearest = _nearest(owner, "alice", "does she eat meat")
    assert nearest[0] == "diet"
    provider = get_provider()
    ranked = semantic_ranked(
        owner=owner, uid="alice", model=provider.name, query_vector=provider.embed(["meat"])[0], limit=10
    )
    own_ids = set(EntryEmbedding.objects.filter(owner=owner, uid="alice").values_list("entry_id", flat=True))
    assert {entry_id for entry_id, _ in ranked} <= own_ids


def test_a_search_sees_a_new_vector_at_once(owner) -> None:
    services.entry_put(owner=owner, uid="alice", key="os", value="runs Debian on a ThinkPad")
    embeddings_process_pending()
    assert "pet" not in _nearest(owner, "alice", "what kind of dog")
    services.entry_put(owner=owner, uid="alice", key="pet", value="has a golden retriever")
    embeddings_process_pending()
    assert _nearest(owner, "alice", "what kind of dog")[0] == "pet"


def test_the_embed_command_embeds_everything_pending(owner, capsys: pytest.CaptureFixture) -> None:
    for number in range(5):
        services.entry_put(owner=owner, uid="alice", key=f"k{number}", value=f"memory number {number}")
    call_command("embed", "--once", "--batch", "2")
    assert "embedded 5 entries in 3 batch(es); 0 pending" in capsys.readouterr().out
    call_command("embed", "--reembed")
    assert "0 entries marked" in capsys.readouterr().out


@pytest.mark.django_db(transaction=True)
def test_the_embed_loop_stops_when_asked(owner) -> None:
    from memories.management.commands.embed import Command

    services.entry_put(owner=owner, uid="alice", key="k", value="v")
    stop = threading.Event()
    command = Command()

    class OnePassJob(EmbeddingJob):
        def run(self, stop_event: threading.Event | None = None) -> EmbedReport:
            report = super().run(stop_event)
            stop.set()
            return report

    command.loop(OnePassJob(), interval=0.01, stop=stop)
    assert embeddings_pending_count() == 0


def test_the_embed_command_refuses_when_embeddings_are_off(settings) -> None:
    settings.MEMORYHUB_EMBEDDINGS = "off"
    with pytest.raises(CommandError, match="MEMORYHUB_EMBEDDINGS is off"):
        call_command("embed", "--once")


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite has no row locks: a writer holds the database")
def test_the_worker_never_waits_on_a_writer_holding_a_vector_row(owner, monkeypatch) -> None:
    # A writer (a batch, say) holds one entry's vector row while the worker stores a batch of vectors: the worker
    # stores the others and leaves that one pending, instead of waiting on the writer (who may be waiting on it).
    entries = [
        services.entry_put(owner=owner, uid="alice", key=f"k{number}", value=f"likes colour {number}").entry
        for number in range(3)
    ]
    held, release = threading.Event(), threading.Event()

    def writer() -> None:
        try:
            with transaction.atomic():
                EntryEmbedding.objects.select_for_update().get(entry=entries[1])
                held.set()
                release.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    real_claim = store._claim

    def claim_then_a_writer_takes_a_row(*arguments, **keywords):
        # The writer comes after the worker claimed the rows, while it embeds their texts.
        claimed = real_claim(*arguments, **keywords)
        thread.start()
        assert held.wait(10)
        return claimed

    monkeypatch.setattr(store, "_claim", claim_then_a_writer_takes_a_row)
    try:
        stored = embeddings_process_pending(limit=10)
    finally:
        release.set()
        thread.join()

    assert stored == 2
    pending = set(EntryEmbedding.objects.filter(pending=True).values_list("entry_id", flat=True))
    assert pending == {entries[1].pk}
