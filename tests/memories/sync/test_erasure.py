"""Erasure reaches Honcho: every session of the erased uid goes, shared entries' and earlier ones'."""

import pytest

from memories import services
from memories.models import SyncTask
from tests.support.sync import sessions_by_id

pytestmark = pytest.mark.usefixtures("sync_on")


def test_erasing_deletes_the_users_honcho_sessions_even_of_entries_deleted_while_sync_was_off(
    owner, honcho_double, worker, settings
):
    services.entry_put(owner=owner, uid="alice", key="diagnosis", value="asthma")
    services.entry_put(owner=owner, uid="alice", key="tz", value="CET")
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim", privacy="local")
    services.entry_put(owner=owner, uid="bob", key="editor", value="emacs")
    worker.drain()
    settings.MEMORYHUB_HONCHO_SYNC = False
    services.entry_delete(owner=owner, uid="alice", key="tz")  # sync off: its session stays in Honcho
    settings.MEMORYHUB_HONCHO_SYNC = True

    services.user_erase(owner=owner, uid="alice")
    report = worker.drain()
    honcho_double.purge()

    assert report.failed == 0
    assert {session["metadata"]["mh_uid"] for session in sessions_by_id(honcho_double).values()} == {"bob"}
    assert not SyncTask.objects.filter(uid="alice").exclude(status=SyncTask.Status.DONE).exists()
