"""Sync: mirroring every change in the hub to Honcho, when the operator turns it on.

- `worker`: `SyncWorker`, which drains the outbox (`memories.outbox`, the tasks that services record
  in the same transaction as the entry) to Honcho through `memories.backends.honcho` with bounded
  retries, and `reconcile`, which compares the hub with Honcho.

`manage.py honcho_sync` runs the worker. The outbox is importable without the Honcho SDK; the worker
is not, so only the command and its tests import it.
"""
