"""The database's mark (memories.search.marks): it moves with every change a read could see, and holds still
otherwise, so the caches it vouches for (a user's words, a user's vectors) are read again only when needed."""

import threading

import pytest
from django.db import connection, connections, transaction

from memories import selectors, services
from memories.search.marks import database_mark

pytestmark = pytest.mark.django_db(transaction=True)


def _in_another_connection(work) -> None:
    """work() on another thread, so on another connection of the database, as another request would be."""

    def run() -> None:
        try:
            work()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()


def test_a_write_committed_by_another_connection_moves_the_mark(owner):
    before = database_mark()
    assert before is not None
    _in_another_connection(lambda: services.entry_put(owner=owner, uid="alice", key="drink", value="green tea"))
    after = database_mark()
    assert after is not None and not after.same(before)


def test_a_transaction_that_wrote_has_no_mark_of_its_own_writes(owner):
    with transaction.atomic():
        before = database_mark()
        services.entry_put(owner=owner, uid="alice", key="drink", value="green tea")
        after = database_mark()
        # It sees its own write: a mark that held still would let a cache hide it.
        assert after is None or not after.same(before)
        services.entry_put(owner=owner, uid="alice", key="drink", value="black coffee")
        again = database_mark()
        assert again is None or after is None or not again.same(after)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the server's log is PostgreSQL's")
def test_what_the_server_logs_without_changing_data_leaves_the_mark_where_it_was(owner):
    # A record in the write-ahead log that changes no row (as vacuuming and hint bits write): the caches need
    # not be read again. The server is shared with the other test processes, whose transactions do move the
    # mark, so the check is repeated until one pair of marks falls between two of theirs.
    for _ in range(200):
        before = database_mark()
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_logical_emit_message(false, 'memoryhub-test', 'nothing changed')")
        after = database_mark()
        assert before is not None and after is not None
        if after.same(before):
            return
    pytest.fail("every mark moved across a log record that changed no row")


def test_a_search_finds_by_meaning_a_memory_another_connection_embedded_after_its_last_search(owner, settings):
    """The second search's query vector is kept, so on PostgreSQL it takes the mark from its ranking statement
    rather than a statement of its own: a vector committed in between must still reach it."""
    from memories.embeddings.store import embeddings_process_pending
    from memories.search import hybrid, vectors

    settings.MEMORYHUB_EMBEDDINGS = "local"
    hybrid.provider_pause_clear()
    vectors.vectors_cache_clear()
    services.entry_put(owner=owner, uid="alice", key="editor", value="uses vim with a handful of plugins")
    services.entry_put(owner=owner, uid="alice", key="drink", value="green tea in the morning")
    embeddings_process_pending()

    def nearest(query_text: str) -> list[str]:
        found = selectors.entry_search(owner=owner, uid="alice", query_text=query_text)
        assert found.ranking == "hybrid"
        return [entry.key for entry in found.entries[:10]]

    assert "pet" not in nearest("what kind of dog")

    def write_and_embed() -> None:
        services.entry_put(owner=owner, uid="alice", key="pet", value="has a golden retriever called Miso")
        embeddings_process_pending()

    _in_another_connection(write_and_embed)
    assert nearest("what kind of dog")[0] == "pet"
