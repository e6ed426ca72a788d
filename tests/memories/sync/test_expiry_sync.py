"""Expiry with sync on: the worker's deletion of an expired entry deletes its Honcho session, as a delete would."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from memories import services
from memories.models import MemoryEntry
from tests.support.honcho import TEST_WORKSPACE


def _work(*kinds: str) -> str:
    out = io.StringIO()
    call_command("work", "--once", *[argument for kind in kinds for argument in ("--kind", kind)], stdout=out)
    return out.getvalue()


@pytest.mark.usefixtures("sync_on")
def test_an_expired_entry_leaves_honcho_when_the_worker_deletes_it(owner, served_double):
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=owner, uid="alice", key="mood", value="tired", ttl=3600)
    _work("sync")
    mood_session = MemoryEntry.objects.get(key="mood").honcho_session_id
    assert {session["id"] for session in served_double.sessions(TEST_WORKSPACE)} >= {mood_session}

    MemoryEntry.objects.filter(key="mood").update(expires=timezone.now() - timedelta(seconds=1))
    _work("expiry", "sync")
    served_double.purge()

    remaining = {session["id"] for session in served_double.sessions(TEST_WORKSPACE)}
    assert mood_session not in remaining
    assert remaining == {MemoryEntry.objects.get(key="editor").honcho_session_id}
