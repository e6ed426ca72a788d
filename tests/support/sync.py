"""What the sync tests read back: the outbox's waiting tasks, the double's sessions, the entries by session."""

from honcho_double import HonchoDouble
from memories.models import MemoryEntry, SyncTask
from tests.support.honcho import TEST_WORKSPACE


def waiting(status: str = SyncTask.Status.PENDING) -> int:
    return SyncTask.objects.filter(status=status).count()


def sessions_by_id(double: HonchoDouble) -> dict[str, dict]:
    return {session["id"]: session for session in double.sessions(TEST_WORKSPACE)}


def entries_by_session() -> dict[str, MemoryEntry]:
    return {entry.honcho_session_id: entry for entry in MemoryEntry.objects.all()}
