"""Sync: mirroring every change in the hub to Honcho, when the operator turns it on.

- `outbox`: the sync tasks, the only code that writes them. Services record a task in the same
  transaction as the entry (`outbox.tasks_record`); workers claim, finish and release them.
- `worker`: `SyncWorker`, which drains the outbox to Honcho through `memories.backends.honcho`
  with bounded retries, and `reconcile`, which compares the hub with Honcho.
- `benchmark`: what sync costs a write (`manage.py sync_overhead`).

`manage.py honcho_sync` runs the worker. The outbox is importable without the Honcho SDK; the worker
is not, so only the command and its tests import it.
"""
