"""The one write path for entries.

Every change to a MemoryEntry goes through a function here, in one transaction that also writes
the entry's history (MemoryEvent) and, when sync is on, its sync task (`sync_outbox_record`).
Views, the API, the admin, the tool endpoint and commands call these functions and nothing else
to write. The functions live in one module per job (single entries, batches, imports, account
policies); import them from here.
"""

from memories.services.batch import (
    BATCH_MAX_OPERATIONS,
    BATCH_MIN_EXPECTED_VERSION,
    BatchOp,
    BatchOperation,
    BatchOutcome,
    BatchRejected,
    check_batch_op,
    check_expected_version,
    check_put_has_value,
    entries_batch,
)
from memories.services.entries import (
    ABSENT_VERSION,
    EntryExists,
    EntryNotFound,
    Erasure,
    PutResult,
    VersionConflict,
    account_default_privacy,
    entry_delete,
    entry_put,
    entry_restore,
    entry_update,
    privacy_withdraw,
    probe_data_clear,
    sync_outbox_record,
    user_erase,
    user_forget,
)
from memories.services.guarding import GuardDecision, WriteHeld, guard_decide
from memories.services.held import HeldWriteDecided, NotStaff, held_write_approve, held_write_reject
from memories.services.imports import (
    IMPORT_CLOCK_SKEW,
    IMPORT_MAX_VERSION,
    ImportCounts,
    ImportRecord,
    RestoreCounts,
    RestoreEntry,
    RestoreEvent,
    RestoreLine,
    entries_import,
    history_restore,
    search_statistics_refresh,
)
from memories.services.policies import InvalidPolicy, account_policy_set

__all__ = [
    "ABSENT_VERSION",
    "BATCH_MAX_OPERATIONS",
    "BATCH_MIN_EXPECTED_VERSION",
    "IMPORT_CLOCK_SKEW",
    "IMPORT_MAX_VERSION",
    "BatchOp",
    "BatchOperation",
    "BatchOutcome",
    "BatchRejected",
    "EntryExists",
    "EntryNotFound",
    "Erasure",
    "GuardDecision",
    "HeldWriteDecided",
    "ImportCounts",
    "ImportRecord",
    "InvalidPolicy",
    "NotStaff",
    "PutResult",
    "RestoreCounts",
    "RestoreEntry",
    "RestoreEvent",
    "RestoreLine",
    "VersionConflict",
    "WriteHeld",
    "account_default_privacy",
    "account_policy_set",
    "check_batch_op",
    "check_expected_version",
    "check_put_has_value",
    "entries_batch",
    "entries_import",
    "entry_delete",
    "entry_put",
    "entry_restore",
    "entry_update",
    "guard_decide",
    "held_write_approve",
    "held_write_reject",
    "history_restore",
    "privacy_withdraw",
    "probe_data_clear",
    "search_statistics_refresh",
    "sync_outbox_record",
    "user_erase",
    "user_forget",
]
