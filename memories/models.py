"""Entries and their history.

Entries are written only by memories.services; read them through memories.selectors.
"""

from django.conf import settings
from django.db import models

UID_MAX_LENGTH = 255
KEY_MAX_LENGTH = 255
KIND_MAX_LENGTH = 32
DEFAULT_KIND = "preference"


class MemoryEntry(models.Model):
    """One memory an account holds about one of its users (uid)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_entries")
    uid = models.CharField(max_length=UID_MAX_LENGTH)
    key = models.CharField(max_length=KEY_MAX_LENGTH)
    value = models.TextField()
    kind = models.CharField(max_length=KIND_MAX_LENGTH, default=DEFAULT_KIND)
    meta = models.JSONField(default=dict, blank=True)
    created = models.DateTimeField()
    updated = models.DateTimeField()
    version = models.PositiveIntegerField(default=1)

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
        ]
        indexes = [
            # list and find: one user's entries, newest first
            models.Index(fields=["owner", "uid", "-updated"], name="memory_entry_owner_uid_upd"),
            # users: per-uid counts and last update; the kind filter
            models.Index(fields=["owner", "kind"], name="memory_entry_owner_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.uid}/{self.key}"


class MemoryEvent(models.Model):
    """One change to an entry: created, updated or deleted. History outlives the entry."""

    class Action(models.TextChoices):
        CREATE = "create", "created"
        UPDATE = "update", "updated"
        DELETE = "delete", "deleted"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_events")
    uid = models.CharField(max_length=UID_MAX_LENGTH)
    key = models.CharField(max_length=KEY_MAX_LENGTH)
    action = models.CharField(max_length=8, choices=Action.choices)
    version = models.PositiveIntegerField()
    value_before = models.TextField(null=True, blank=True)
    value_after = models.TextField(null=True, blank=True)
    kind_before = models.CharField(max_length=KIND_MAX_LENGTH, null=True, blank=True)
    kind_after = models.CharField(max_length=KIND_MAX_LENGTH, null=True, blank=True)
    meta_before = models.JSONField(null=True, blank=True)
    meta_after = models.JSONField(null=True, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The account that made the change.",
    )
    at = models.DateTimeField()

    class Meta:
        verbose_name = "memory event"
        constraints = [
            models.CheckConstraint(condition=models.Q(action__in=["create", "update", "delete"]), name="memory_event_action_valid"),
        ]
        indexes = [
            models.Index(fields=["owner", "uid", "key", "-id"], name="memory_event_entry_history"),
            models.Index(fields=["owner", "at"], name="memory_event_owner_at"),
        ]

    def __str__(self) -> str:
        return f"{self.uid}/{self.key} {self.action} v{self.version}"
