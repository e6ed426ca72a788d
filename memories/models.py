"""Entries and their history.

Entries are written only by memories.services; read them through memories.selectors.
"""

import secrets
import time
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from memories.folding import fold
from memories.guard import name_reveal

UID_MAX_LENGTH = 255
KEY_MAX_LENGTH = 255
KIND_MAX_LENGTH = 32
DEFAULT_KIND = "preference"
# The evaluation's probe data lives under this uid of this account, never beside real entries.
PROBE_USERNAME = "memoryhub-probe"
PROBE_UID = "_memoryhub_probe_"
HONCHO_SESSION_ID_MAX_LENGTH = 64
# The names of the write guard's rules an entry broke, comma-separated (memories.guard).
GUARD_FLAGS_MAX_LENGTH = 500
EMBEDDING_MODEL_MAX_LENGTH = 200


def new_honcho_session_id() -> str:
    """A fresh id for the Honcho session that mirrors one entry: made once, when the entry is created.

    Never derived from the key: after a delete, Honcho answers 404 for the old id until it purges
    it, and a re-created key must not wait for that. The creation time in nanoseconds leads, and 64
    random bits follow: new ids land at the end of the unique index instead of at random places in
    it, which keeps a large import from rewriting pages all over the index.
    """
    return f"mh-{time.time_ns():016x}{secrets.token_hex(8)}"


class FoldedCopyField(models.TextField):
    """A copy of another field's text, folded for search (memories.folding.fold), kept by the field itself.

    Like auto_now, the copy is made whenever the row is saved (save() and bulk_create), so no writer
    can store a value and forget its folded copy; a save with update_fields must name the copy too,
    and the import's raw INSERT writes it with the value.
    """

    def __init__(self, *args: Any, source: str = "", **kwargs: Any) -> None:
        self.source = source
        kwargs.setdefault("editable", False)
        kwargs.setdefault("default", "")
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple:
        name, path, args, kwargs = super().deconstruct()
        kwargs["source"] = self.source
        kwargs.pop("editable", None)
        if kwargs.get("default") == "":
            kwargs.pop("default")
        return name, path, args, kwargs

    def pre_save(self, model_instance: models.Model, add: bool) -> str:
        folded = fold(getattr(model_instance, self.source))
        setattr(model_instance, self.attname, folded)
        return folded


class Privacy(models.TextChoices):
    """Where an entry may go: `local` never leaves the machine (no sync, no remote embeddings)."""

    LOCAL = "local", "local"
    SHARED = "shared", "shared"


class GuardMode(models.TextChoices):
    """What the write guard does with a value that looks like an injection: store it, mark it, or hold it."""

    ALLOW = "allow", "allow"
    FLAG = "flag", "flag"
    HOLD = "hold", "hold"


class AccountPolicy(models.Model):
    """An operator's rules for one account's memories, made on the first change (until then the defaults hold).

    Read it through memories.selectors.account_policy (which answers the defaults for an account that
    has none, without writing) and change it through memories.services.account_policy_set.
    """

    account = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="memory_policy"
    )
    default_privacy = models.CharField(
        max_length=8,
        choices=Privacy.choices,
        default=Privacy.SHARED,
        help_text="The privacy class of a write that names none.",
    )
    guard_mode = models.CharField(
        max_length=8,
        choices=GuardMode.choices,
        default=GuardMode.FLAG,
        help_text="allow: store as written; flag: store and mark; hold: keep for staff to approve or reject.",
    )
    context_includes_flagged = models.BooleanField(
        default=False, help_text="Whether flagged entries appear in the context block."
    )
    updated = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = "account policy"
        verbose_name_plural = "account policies"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(default_privacy__in=["local", "shared"]), name="account_policy_privacy_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(guard_mode__in=["allow", "flag", "hold"]), name="account_policy_guard_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"policy of {self.account}"


class MemoryEntry(models.Model):
    """One memory an account holds about one of its users (uid)."""

    # Not indexed alone: every index of the table starts with owner_id (migration 0021).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_entries", db_index=False
    )
    uid = models.CharField(max_length=UID_MAX_LENGTH)
    key = models.CharField(max_length=KEY_MAX_LENGTH)
    value = models.TextField()
    kind = models.CharField(max_length=KIND_MAX_LENGTH, default=DEFAULT_KIND)
    meta = models.JSONField(default=dict, blank=True)
    # local: never synced to Honcho nor sent to a remote embeddings endpoint (memories.outbox, memories.embeddings).
    privacy = models.CharField(max_length=8, choices=Privacy.choices, default=Privacy.SHARED)
    created = models.DateTimeField()
    updated = models.DateTimeField()
    version = models.PositiveIntegerField(default=1)
    # When the entry stops being read (memories.expiry); None keeps it until it is deleted.
    expires = models.DateTimeField(null=True, blank=True)
    # What search reads: key and value without case or accents (memories.folding).
    key_folded = FoldedCopyField(source="key")
    value_folded = FoldedCopyField(source="value")
    # Not columns: set on the entries a search returns (memories.search), its score and the words matched.
    score: float | None
    matched_terms: tuple[str, ...]
    # And in a hybrid search (memories.search.hybrid), what each ranking said of it.
    lexical_rank: int | None
    lexical_score: float | None
    semantic_similarity: float | None
    # Whether it passes the hybrid ranking's relevance cut-off (memories.search.hybrid.SEMANTIC_STANDOUT).
    relevant: bool | None
    # Kept across updates; a deleted and re-created key gets a new one. Filled whether sync is on or not.
    honcho_session_id = models.CharField(
        max_length=HONCHO_SESSION_ID_MAX_LENGTH, unique=True, default=new_honcho_session_id, editable=False
    )
    # The write guard's rules the key or value broke when it was written, comma-separated, in rule order
    # ("" for none): set by memories.services when the account's guard flags (memories.guard).
    guard_flags = models.CharField(max_length=GUARD_FLAGS_MAX_LENGTH, blank=True, default="", editable=False)

    class Meta:
        verbose_name = "memory entry"
        verbose_name_plural = "memory entries"
        constraints = [
            models.UniqueConstraint(fields=["owner", "uid", "key"], name="memory_entry_unique_owner_uid_key"),
            models.CheckConstraint(condition=models.Q(version__gte=1), name="memory_entry_version_positive"),
            models.CheckConstraint(
                condition=~models.Q(uid="") & ~models.Q(key="") & ~models.Q(kind=""),
                name="memory_entry_identity_not_empty",
            ),
            models.CheckConstraint(
                condition=models.Q(privacy__in=["local", "shared"]), name="memory_entry_privacy_valid"
            ),
        ]
        indexes = [
            # list and find: one user's entries, newest first; with expires and guard_flags, the context
            # block's count of what a read sees is answered from the index alone
            models.Index(
                fields=["owner", "uid", "-updated", "expires", "guard_flags"], name="memory_entry_user_updated_live"
            ),
            # users: per-uid counts and last update; the kind filter
            models.Index(fields=["owner", "kind"], name="memory_entry_owner_kind"),
            # the expiry worker's scan: only entries that expire at all are in it
            models.Index(fields=["expires"], condition=models.Q(expires__isnull=False), name="memory_entry_expires"),
        ]

    def __str__(self) -> str:
        # As a page shows it (the admin's titles): a character that would reorder or hide part of it written out.
        return f"{name_reveal(self.uid)}/{name_reveal(self.key)}"

    def expired(self, now: datetime) -> bool:
        """Whether the entry's expiry has passed: then no read shows it, and the worker deletes it."""
        return self.expires is not None and self.expires <= now

    @property
    def guard_flag_names(self) -> list[str]:
        """The write guard's rules this entry broke, in rule order; [] when it broke none."""
        return self.guard_flags.split(",") if self.guard_flags else []


class HeldWrite(models.Model):
    """A write the guard held for review: not stored as an entry, invisible to every read, until staff decide.

    Written only by memories.services: created when an account whose guard mode is `hold` writes a
    value that breaks a rule (memories.guard), approved (the write is applied, as its decider) or
    rejected (nothing is stored), and kept afterwards as the record of who decided and when.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending review"
        APPROVED = "approved", "approved"
        REJECTED = "rejected", "rejected"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="held_writes")
    uid = models.CharField(max_length=UID_MAX_LENGTH)
    key = models.CharField(max_length=KEY_MAX_LENGTH)
    value = models.TextField(help_text="The value the write asked to store.")
    kind = models.CharField(  # noqa: DJ001 - None keeps the entry's kind, as a put without kind does
        max_length=KIND_MAX_LENGTH, null=True, blank=True, help_text="Empty: the write kept the entry's kind."
    )
    meta = models.JSONField(null=True, blank=True, help_text="Empty: the write kept the entry's meta.")
    privacy = models.CharField(  # noqa: DJ001 - None: the entry's privacy, or the account's default, as a put without one
        max_length=8, choices=Privacy.choices, null=True, blank=True, help_text="Empty: the write named none."
    )
    # The expiry the write asked for, applied on approval (memories.services.held): a ttl counts from the
    # approval (the time held is not taken from it), an expires time stays the moment named.
    ttl = models.PositiveIntegerField(
        null=True, blank=True, help_text="Seconds the entry is to live, counted from the approval."
    )
    expires = models.DateTimeField(null=True, blank=True, help_text="When the entry is to expire, as the write named.")
    clears_expiry = models.BooleanField(default=False, help_text="The write asked for no expiry (expires: null).")
    expected_version = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The version the write named (If-Match; 0: create only): approved only while the memory is at it.",
    )
    guard_flags = models.CharField(max_length=GUARD_FLAGS_MAX_LENGTH, help_text="The rules the write broke.")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The account that made the write.",
    )
    requested_at = models.DateTimeField()
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The staff member who approved or rejected it.",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    entry_version = models.PositiveIntegerField(
        null=True, blank=True, help_text="The entry's version once the approved write was applied."
    )

    class Meta:
        verbose_name = "held write"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=["pending", "approved", "rejected"]), name="held_write_status_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(status="pending", decided_at=None)
                | (~models.Q(status="pending") & ~models.Q(decided_at=None)),
                name="held_write_decided_when_not_pending",
            ),
            models.CheckConstraint(
                condition=(models.Q(ttl=None) | models.Q(expires=None))
                & (models.Q(clears_expiry=False) | (models.Q(ttl=None) & models.Q(expires=None))),
                name="held_write_one_expiry",
            ),
        ]
        indexes = [
            # the review queue: pending writes, oldest first; an account's own held writes
            models.Index(fields=["status", "requested_at"], name="held_write_queue"),
            models.Index(fields=["owner", "uid", "key"], name="held_write_owner_entry"),
        ]

    def __str__(self) -> str:
        return f"held write {name_reveal(self.uid)}/{name_reveal(self.key)} ({self.status})"

    @property
    def asked_expiry(self) -> str:
        """The expiry the write asked for, in words, in the hub's time zone as every page's times; "" when it left
        the expiry as it was."""
        if self.ttl is not None:
            return f"expires {self.ttl} seconds after approval"
        if self.expires is not None:
            moment = timezone.localtime(self.expires).strftime("%Y-%m-%d %H:%M:%S")
            if self.expiry_passed and self.status == self.Status.PENDING:
                return f"expired at {moment} ({settings.TIME_ZONE}): it can no longer be approved, only rejected"
            return f"expires at {moment} ({settings.TIME_ZONE})"
        return "never expires" if self.clears_expiry else ""

    @property
    def expiry_passed(self) -> bool:
        """Whether the time it asked to expire at has passed (approving it would store a memory already gone)."""
        return self.expires is not None and self.expires <= timezone.now()

    @property
    def guard_flag_names(self) -> list[str]:
        return self.guard_flags.split(",") if self.guard_flags else []


# The constraint that no two creates or updates of a key share a version (MemoryEvent.Meta).
EVENT_VERSION_ONCE = "memory_event_version_once"


class MemoryEvent(models.Model):
    """One change to an entry: created, updated, deleted, expired or erased, or a held write rejected. History
    outlives the entry.

    An expiry is recorded by the worker with no actor: no account made it.
    A write the guard held (HeldWrite) is recorded when staff decide on it, with the staff member as the
    actor and the held write named (held_write): an approval as the create or update it became, a
    rejection as a `reject` event that changes nothing (before and after are the entry as it stood,
    none when there was no entry; version is the entry's, or the key's last one), whose held write
    holds the value that was refused. History readers that ask what an entry's state was skip rejects.
    An erasure (a request to be forgotten) removes every entry and event of a uid and leaves one
    `erase` event in their place: who erased (actor), when (at), and how many entries (entries_erased),
    with an empty key and no values.
    """

    class Action(models.TextChoices):
        CREATE = "create", "created"
        UPDATE = "update", "updated"
        DELETE = "delete", "deleted"
        ERASE = "erase", "erased"
        EXPIRE = "expire", "expired"
        REJECT = "reject", "rejected"

    # Not indexed alone: the history's indexes start with owner_id (migration 0021).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_events", db_index=False
    )
    uid = models.CharField(max_length=UID_MAX_LENGTH)
    key = models.CharField(max_length=KEY_MAX_LENGTH)
    action = models.CharField(max_length=8, choices=Action.choices)
    version = models.PositiveIntegerField()
    # None, not "": there was no entry before a create, nor after a delete.
    value_before = models.TextField(null=True, blank=True)  # noqa: DJ001
    value_after = models.TextField(null=True, blank=True)  # noqa: DJ001
    kind_before = models.CharField(max_length=KIND_MAX_LENGTH, null=True, blank=True)  # noqa: DJ001
    kind_after = models.CharField(max_length=KIND_MAX_LENGTH, null=True, blank=True)  # noqa: DJ001
    meta_before = models.JSONField(null=True, blank=True)
    meta_after = models.JSONField(null=True, blank=True)
    privacy_before = models.CharField(max_length=8, choices=Privacy.choices, null=True, blank=True)  # noqa: DJ001
    privacy_after = models.CharField(max_length=8, choices=Privacy.choices, null=True, blank=True)  # noqa: DJ001
    created_before = models.DateTimeField(
        null=True,
        blank=True,
        help_text="The entry's creation time before the change, which a restore gives back (none for a create; "
        "none in history written before it was recorded).",
    )
    entries_erased = models.PositiveIntegerField(null=True, blank=True, help_text="For an erasure: how many entries.")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The account that made the change; empty for an expiry, which no account makes.",
    )
    held_write = models.ForeignKey(
        HeldWrite,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="events",
        help_text="For a decision on a held write (its approval or rejection): that held write.",
        # Indexed where it is set only (Meta.indexes): most events have none.
        db_index=False,
    )
    at = models.DateTimeField()

    class Meta:
        verbose_name = "memory event"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(action__in=["create", "update", "delete", "erase", "expire", "reject"]),
                name="memory_event_action_valid",
            ),
            # A version names one state of a key: no two creates or updates of a key share one. (A delete or an
            # expiry records the version it removed, a reject the one it left, so they repeat it.) Migration
            # 0024 creates it, leaving out events written before it that already repeat a version.
            models.UniqueConstraint(
                fields=["owner", "uid", "key", "version"],
                condition=models.Q(action__in=["create", "update"]),
                name=EVENT_VERSION_ONCE,
            ),
        ]
        indexes = [
            models.Index(fields=["owner", "uid", "key", "-id"], name="memory_event_entry_history"),
            models.Index(fields=["owner", "at"], name="memory_event_owner_at"),
            # a held write's events: the few decisions on held writes have one
            models.Index(
                fields=["held_write"], condition=models.Q(held_write__isnull=False), name="memory_event_held_write"
            ),
        ]

    def __str__(self) -> str:
        return f"{name_reveal(self.uid)}/{name_reveal(self.key)} {self.action} v{self.version}"


class SyncTask(models.Model):
    """One entry's change waiting to be mirrored to Honcho: the sync outbox.

    One row per Honcho session (one entry from creation to deletion), so several changes to an entry
    collapse into one task, and the worker pushes the entry's current state (or deletes its session
    when the entry is gone). Each new change bumps `revision`; a worker that pushed an older revision
    leaves the task pending. Rows are written only by memories.outbox.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        FAILED = "failed", "failed"
        DONE = "done", "done"

    class Operation(models.TextChoices):
        UPSERT = "upsert", "upsert"
        DELETE = "delete", "delete"

    session_id = models.CharField(
        max_length=HONCHO_SESSION_ID_MAX_LENGTH, unique=True, help_text="The entry's Honcho session."
    )
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="sync_tasks",
        help_text="Empty for a session whose account no longer exists (found by a reconciliation).",
    )
    uid = models.CharField(max_length=UID_MAX_LENGTH)
    key = models.CharField(max_length=KEY_MAX_LENGTH)
    operation = models.CharField(
        max_length=8,
        choices=Operation.choices,
        help_text="The latest change: the worker pushes the entry as it is now.",
    )
    version = models.PositiveIntegerField(help_text="The entry's version at the latest change.")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    revision = models.PositiveIntegerField(default=1, help_text="Bumped by each change.")
    attempts = models.PositiveIntegerField(default=0, help_text="Failed pushes of the current revision.")
    next_attempt_at = models.DateTimeField()
    pending_since = models.DateTimeField(help_text="When the oldest change not yet in Honcho was made.")
    claim_token = models.CharField(max_length=64, blank=True, default="", help_text="The worker pass holding the task.")
    lease_until = models.DateTimeField(null=True, blank=True, help_text="Another worker may take the task after this.")
    last_error = models.TextField(blank=True, default="")
    last_error_at = models.DateTimeField(null=True, blank=True)
    done_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField()

    class Meta:
        verbose_name = "sync task"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(status__in=["pending", "failed", "done"]), name="sync_task_status_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(operation__in=["upsert", "delete"]), name="sync_task_operation_valid"
            ),
        ]
        indexes = [
            # the worker's claim: pending tasks that are due
            models.Index(fields=["status", "next_attempt_at"], name="sync_task_due"),
            # an account's status counts
            models.Index(fields=["owner", "status"], name="sync_task_owner_status"),
        ]

    def __str__(self) -> str:
        return f"{self.operation} {self.uid}/{self.key} ({self.status})"


class EntryEmbedding(models.Model):
    """An entry's vector for semantic recall, and whether the entry changed since it was made.

    One row per entry, written by memories.embeddings.store only: the services mark it pending in
    the transaction that changes the entry's text (`wanted_version` = the entry's version then),
    and the worker fills `vector` later, off the request path, setting `embedded_version`; a row is
    pending again as soon as a newer change marks it. `owner` and `uid` are the entry's, copied so a
    search reads one user's vectors from one index. `vector` is `dimension` float32 values, little
    endian, of length 1; `model` names the provider that made it (vectors of another model are not
    searched, and `manage.py embed --reembed` makes them again).
    """

    entry = models.OneToOneField(MemoryEntry, on_delete=models.CASCADE, primary_key=True, related_name="embedding")
    # Not indexed alone: the user's stamp index starts with owner_id (migration 0021).
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    uid = models.CharField(max_length=UID_MAX_LENGTH)
    model = models.CharField(max_length=EMBEDDING_MODEL_MAX_LENGTH, blank=True, default="")
    dimension = models.PositiveIntegerField(default=0)
    vector = models.BinaryField(null=True, blank=True)
    embedded_version = models.PositiveIntegerField(null=True, blank=True, help_text="The entry version embedded.")
    wanted_version = models.PositiveIntegerField(help_text="The entry version at the latest change of its text.")
    pending = models.BooleanField(default=True)
    claimed_until = models.DateTimeField(null=True, blank=True, help_text="A worker holds the row until then.")
    embedded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "entry embedding"
        indexes = [
            # a search: one user's vectors of one model; with embedded_at, the cache's check reads the index alone
            models.Index(fields=["owner", "uid", "model", "embedded_at"], name="entry_embedding_user_stamp"),
            # the worker's claim: pending rows only
            models.Index(fields=["entry"], condition=models.Q(pending=True), name="entry_embedding_pending"),
        ]

    def __str__(self) -> str:
        return f"embedding of entry {self.entry_id} ({'pending' if self.pending else self.model})"


class LeasedJob(models.Model):
    """Background work that a worker claims with a lease (abstract: a kind of job's model inherits it).

    A worker takes a pending job by setting its claim token and lease (memories.leases), renews the
    lease while it works, and finishes it done or failed. A job whose lease ran out (its worker died)
    is taken again, until it has been taken JOB_MAX_ATTEMPTS times; then it is failed, never left
    running forever.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True, default="", help_text="Why the job failed.")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="How many times a worker took the job.")
    claim_token = models.CharField(max_length=32, blank=True, default="", help_text="The worker holding the job.")
    lease_until = models.DateTimeField(null=True, blank=True, help_text="Another worker may take the job after this.")

    # The field a job's model keeps the time it ended in (done or failed), when it keeps one.
    FINISHED_FIELD: str | None = None

    class Meta:
        abstract = True


WORKER_NAME_MAX_LENGTH = 128


class WorkerHeartbeat(models.Model):
    """One running `manage.py work` process, as it last reported itself (written by memories.work only)."""

    name = models.CharField(max_length=WORKER_NAME_MAX_LENGTH, unique=True, help_text="host:pid")
    kinds = models.CharField(max_length=255, help_text="The kinds of work it does, comma-separated.")
    started_at = models.DateTimeField(default=timezone.now)
    seen_at = models.DateTimeField(default=timezone.now)
    # When it stopped (it no longer counts as there; its last seen time is still told). None: running.
    stopped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "worker heartbeat"
        indexes = [models.Index(fields=["-seen_at"], name="worker_heartbeat_seen")]

    def __str__(self) -> str:
        return f"worker {self.name} ({self.kinds})"


class LoginFailure(models.Model):
    """One failed login to the dashboard or the admin, kept while it counts towards a lock-out.

    Written and read only by memories.logins: after LOGIN_FAILURES_ALLOWED failures for a username
    from one address within LOGIN_LOCKOUT_WINDOW, that pair is locked out until the window passes.
    """

    username = models.CharField(
        max_length=150, help_text="As authentication reads it: stripped, Unicode NFKC, case kept."
    )
    address = models.CharField(max_length=64, help_text="The client's address as the trusted proxy reports it.")
    at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["username", "address", "at"], name="login_failure_recent")]

    def __str__(self) -> str:
        return f"{self.username} from {self.address} at {self.at:%Y-%m-%d %H:%M:%S}"
