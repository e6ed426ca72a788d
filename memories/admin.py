"""The admin: entries listed, searched and filtered; every edit and delete goes through the services."""

from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.forms.fields import InvalidJSONInput
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from memories import outbox, selectors, services
from memories.accounts import request_account
from memories.forms import same_lines
from memories.guard import guard_reasons, guard_reveal, name_reveal
from memories.models import AccountPolicy, HeldWrite, MemoryEntry, MemoryEvent, Privacy, SyncTask
from memories.validation import (
    EXPIRY_MAX_SECONDS,
    META_MAX_DEPTH,
    InvalidField,
    check_expires,
    check_key,
    check_kind,
    check_meta,
    check_uid,
    check_value,
)


class MetaJSONField(forms.JSONField):
    """The admin's meta box: JSON nested past Python's recursion limit is a field error, not a 500."""

    def to_python(self, value: object) -> Any:  # noqa: ANN401 - forms.JSONField's own: any JSON value
        try:
            return super().to_python(value)
        except RecursionError:
            raise ValidationError(f"must be nested at most {META_MAX_DEPTH} levels deep.", code="invalid") from None

    def bound_data(self, data: object, initial: object) -> Any:  # noqa: ANN401 - forms.JSONField's own
        try:
            return super().bound_data(data, initial)
        except RecursionError:
            return InvalidJSONInput(data)


def _to_the_second(moment: datetime | None) -> datetime | None:
    return None if moment is None else moment.replace(microsecond=0)


class NamesShown(admin.ModelAdmin):
    """An admin of rows with a uid and a key, shown with the characters that would reorder or hide part of them
    written out (name_reveal): list them as "shown_uid" and "shown_key"."""

    @admin.display(description="uid", ordering="uid")
    def shown_uid(self, row: MemoryEntry | HeldWrite | MemoryEvent | SyncTask) -> str:
        return name_reveal(row.uid)

    @admin.display(description="key", ordering="key")
    def shown_key(self, row: MemoryEntry | HeldWrite | MemoryEvent | SyncTask) -> str:
        return name_reveal(row.key)


class MemoryEntryForm(forms.ModelForm):
    # Not stripped: a value's leading and trailing spaces and line breaks are the agent's (Django's default strips).
    value = forms.CharField(strip=False, widget=forms.Textarea)
    meta = MetaJSONField(required=False)
    # Left empty on a new entry: the account's default_privacy, as a write that names none.
    privacy = forms.ChoiceField(
        choices=[("", "the account's default"), *Privacy.choices],
        required=False,
        help_text="local: never synced to Honcho nor sent to a remote embeddings endpoint.",
    )
    # The version the change form showed: saving it changes the entry only while it is still at it.
    shown_version = forms.IntegerField(widget=forms.HiddenInput, min_value=1, required=False)

    class Meta:
        model = MemoryEntry
        fields = ["owner", "uid", "key", "value", "kind", "meta", "privacy", "expires"]
        help_texts = {
            "expires": f"When the entry expires ({settings.TIME_ZONE}): then no read shows it, and the worker deletes "
            f"it. Empty: never. A future time, at most {EXPIRY_MAX_SECONDS} seconds ahead.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None:
            self.fields["shown_version"].initial = self.instance.version
            self.fields["shown_version"].required = True
            self.fields["shown_version"].error_messages["required"] = (
                "The form does not say which version it showed; reload the page."
            )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        shown = cleaned.get("shown_version")
        if self.instance.pk is not None and shown is not None and shown != self.instance.version:
            self.add_error(
                None,
                f"This entry changed while you were editing it (it is now at version {self.instance.version}, "
                f"the form showed version {shown}). Reload the page to see the new value, then make your change.",
            )
        if "meta" in cleaned and cleaned["meta"] is None:
            cleaned["meta"] = {}
        if isinstance(cleaned.get("value"), str):
            # A browser sends a textarea's line breaks as CRLF: a value left as it was is kept byte for byte, a
            # changed one is stored with LF, as the dashboard's form does (a save of the kind alone rewrote every
            # line break, and a value near its byte limit could not be saved at all).
            value = same_lines(cleaned["value"])
            unchanged = self.instance.pk is not None and same_lines(self.instance.value) == value
            cleaned["value"] = self.instance.value if unchanged else value
        # The expiry as shown (to the second) and left alone is kept; another one is checked as the API checks it.
        self.expires_changed = _to_the_second(cleaned.get("expires")) != _to_the_second(self.instance.expires)
        if self.expires_changed and cleaned.get("expires") is not None:
            try:
                check_expires(cleaned["expires"], now=timezone.now())
            except InvalidField as error:
                self.add_error("expires", ValidationError(error.message))
        checks = {"uid": check_uid, "key": check_key, "value": check_value, "kind": check_kind, "meta": check_meta}
        for field, check in checks.items():
            if field in cleaned and field in self.fields and not self.fields[field].disabled:
                try:
                    check(cleaned[field])
                except InvalidField as error:
                    self.add_error(field, ValidationError(error.message))
        return cleaned

    def validate_unique(self) -> None:
        # The service upserts on (owner, uid, key); it is the one to decide what exists.
        pass


def _expiry_changed(form: forms.ModelForm) -> bool:
    return isinstance(form, MemoryEntryForm) and form.expires_changed


@admin.register(MemoryEntry)
class MemoryEntryAdmin(NamesShown):
    form = MemoryEntryForm
    list_display = [
        "shown_uid",
        "shown_key",
        "kind",
        "privacy",
        "owner",
        "version",
        "updated",
        "expires",
        "guard_flags",
    ]
    list_filter = ["kind", "privacy", "owner", ("guard_flags", admin.EmptyFieldListFilter)]
    search_fields = ["uid", "key", "value"]
    list_select_related = ["owner"]
    ordering = ["-updated"]
    readonly_fields = ["version", "created", "updated", "guard_flags", "history"]

    def get_readonly_fields(self, request: HttpRequest, obj: MemoryEntry | None = None) -> list[str]:
        # An entry's identity is fixed once it exists: changing it would be a delete and a create.
        if obj is not None:
            return ["owner", "uid", "key", *self.readonly_fields]
        return [field for field in self.readonly_fields if field != "history"]

    def history_view(self, request: HttpRequest, object_id: str, extra_context: dict | None = None) -> HttpResponse:
        """The change form's History button: the memory's own history (its events), not Django's log of admin
        edits, which records none of the changes agents make through the API."""
        entry = self.get_object(request, object_id)
        if entry is None or not self.has_view_or_change_permission(request, entry):
            return super().history_view(request, object_id, extra_context)
        events = reverse("admin:memories_memoryevent_changelist")
        query = urlencode({"owner__id__exact": entry.owner_id, "uid__exact": entry.uid, "key__exact": entry.key})
        return HttpResponseRedirect(f"{events}?{query}")

    @admin.display(description="History (newest first)")
    def history(self, entry: MemoryEntry) -> str:
        events = selectors.entry_history(owner=entry.owner, uid=entry.uid, key=entry.key)
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>v{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    # In the hub's time zone, to the second, as the admin shows its other times.
                    timezone.localtime(event.at).strftime("%Y-%m-%d %H:%M:%S"),
                    event.version,
                    event.get_action_display(),
                    event.actor or "",
                    event.value_before or "",
                    event.value_after or "",
                )
                for event in events
            ),
        )
        return format_html(
            "<table><thead><tr><th>when</th><th>version</th><th>action</th><th>by</th><th>before</th><th>after</th></tr></thead>"
            "<tbody>{}</tbody></table>",
            rows,
        )

    def save_model(self, request: HttpRequest, obj: MemoryEntry, form: forms.ModelForm, change: bool) -> None:
        try:
            result = services.entry_put(
                owner=obj.owner,
                uid=obj.uid,
                key=obj.key,
                value=obj.value,
                kind=obj.kind,
                meta=obj.meta,
                privacy=form.cleaned_data.get("privacy") or None,
                expires=form.cleaned_data.get("expires") if _expiry_changed(form) else services.KEEP,
                actor=request_account(request),
                expected_version=form.cleaned_data.get("shown_version") if change else None,
            )
        except services.VersionConflict as conflict:
            # A change that landed between the form's check and this write: say so, overwrite nothing.
            request.memory_conflict = conflict  # type: ignore[attr-defined]
            return
        except services.WriteHeld as held:
            # Not stored: the write guard holds it for review (the account's guard mode is hold).
            request.memory_held = held.held  # type: ignore[attr-defined]
            return
        # The admin reads obj.pk afterwards to build its message and redirect.
        obj.pk = result.entry.pk
        obj.version = result.entry.version

    def _held_response(self, request: HttpRequest) -> HttpResponse | None:
        held = getattr(request, "memory_held", None)
        if held is None:
            return None
        self.message_user(
            request,
            f"Nothing was stored: the write guard holds this write for review ({held.guard_flags}). "
            "Approve or reject it among the held writes.",
            messages.WARNING,
        )
        return HttpResponseRedirect(reverse("admin:memories_heldwrite_change", args=[held.pk]))

    def response_add(
        self, request: HttpRequest, obj: MemoryEntry, post_url_continue: str | None = None
    ) -> HttpResponse:
        return self._held_response(request) or super().response_add(request, obj, post_url_continue)

    def response_change(self, request: HttpRequest, obj: MemoryEntry) -> HttpResponse:
        held_response = self._held_response(request)
        if held_response is not None:
            return held_response
        conflict = getattr(request, "memory_conflict", None)
        if conflict is None:
            return super().response_change(request, obj)
        self.message_user(
            request,
            f"Nothing was saved: this entry changed while you were editing it ({conflict}). "
            "Here it is as it is now; make your change again.",
            messages.ERROR,
        )
        return HttpResponseRedirect(request.path)

    def delete_model(self, request: HttpRequest, obj: MemoryEntry) -> None:
        services.entry_delete(owner=obj.owner, uid=obj.uid, key=obj.key, actor=request_account(request))

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[MemoryEntry]) -> None:
        for entry in queryset.select_related("owner"):
            services.entry_delete(owner=entry.owner, uid=entry.uid, key=entry.key, actor=request_account(request))


@admin.register(HeldWrite)
class HeldWriteAdmin(NamesShown):
    """The review queue: staff approve (the write is applied, as them) or reject held writes; never edited."""

    list_display = [
        "requested_at",
        "owner",
        "shown_uid",
        "shown_key",
        "guard_flags",
        "status",
        "decided_by",
        "decided_at",
    ]
    list_filter = ["status", "owner"]
    search_fields = ["uid", "key", "value"]
    list_select_related = ["owner", "decided_by"]
    ordering = ["status", "requested_at"]
    actions = ["approve", "reject"]
    # Shown as shown_uid and shown_key instead (written out where a character would reorder or hide part of them).
    exclude = ["uid", "key"]
    readonly_fields = [
        "owner", "shown_uid", "shown_key", "value", "revealed_value", "kind", "meta", "asked_expiry",
        "expected_version", "guard_flags", "reasons", "requested_by", "requested_at", "status", "decided_by",
        "decided_at", "entry_version",
    ]  # fmt: skip

    @admin.display(description="Value, hidden characters written out")
    def revealed_value(self, held: HeldWrite) -> str:
        return guard_reveal(held.value)

    @admin.display(description="Expiry asked for")
    def asked_expiry(self, held: HeldWrite) -> str:
        return held.asked_expiry or "none (the memory keeps its own)"

    @admin.display(description="Why")
    def reasons(self, held: HeldWrite) -> str:
        return format_html_join("", "<p><strong>{}</strong>: {}</p>", guard_reasons(held.guard_flag_names))

    def _decide(self, request: HttpRequest, queryset: QuerySet[HeldWrite], *, approve: bool) -> None:
        decided, skipped = 0, 0
        for held_id in queryset.values_list("pk", flat=True):
            try:
                if approve:
                    services.held_write_approve(held_id=held_id, decider=request_account(request))
                else:
                    services.held_write_reject(held_id=held_id, decider=request_account(request))
            except (services.HeldWriteDecided, InvalidField, services.VersionConflict):
                skipped += 1
            else:
                decided += 1
        verb = "Approved and stored" if approve else "Rejected"
        self.message_user(request, f"{verb} {decided} held writes.", messages.SUCCESS if decided else messages.INFO)
        if skipped:
            self.message_user(
                request,
                f"{skipped} were decided already, break a limit, or named a version the memory is no longer at, "
                "and were left.",
                messages.WARNING,
            )

    @admin.action(description="Approve the selected held writes (store them, as you)", permissions=["decide"])
    def approve(self, request: HttpRequest, queryset: QuerySet[HeldWrite]) -> None:
        self._decide(request, queryset, approve=True)

    @admin.action(description="Reject the selected held writes (store nothing)", permissions=["decide"])
    def reject(self, request: HttpRequest, queryset: QuerySet[HeldWrite]) -> None:
        self._decide(request, queryset, approve=False)

    def has_decide_permission(self, request: HttpRequest) -> bool:
        return request.user.is_staff

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: HeldWrite | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: HeldWrite | None = None) -> bool:
        return False


@admin.register(MemoryEvent)
class MemoryEventAdmin(NamesShown):
    """The history, read-only: it records what happened and is never edited."""

    list_display = ["at", "shown_uid", "shown_key", "action", "version", "owner", "actor"]
    list_filter = ["action", "owner"]
    search_fields = ["uid", "key"]
    list_select_related = ["owner", "actor"]
    ordering = ["-id"]
    actions = ["restore_deleted_entries"]

    def has_restore_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("memories.add_memoryentry")

    @admin.action(description="Restore the deleted entries of the selected events", permissions=["restore"])
    def restore_deleted_entries(self, request: HttpRequest, queryset: QuerySet[MemoryEvent]) -> None:
        """Restore each selected deletion's entry (as it was when last deleted) through the service."""
        restored, skipped = 0, 0
        identities = queryset.filter(action=MemoryEvent.Action.DELETE).select_related("owner")
        for owner, uid, key in {(event.owner, event.uid, event.key) for event in identities}:
            try:
                services.entry_restore(owner=owner, uid=uid, key=key, actor=request_account(request))
            except (services.EntryExists, services.EntryNotFound):
                skipped += 1
            else:
                restored += 1
        self.message_user(request, f"Restored {restored} entries.", messages.SUCCESS if restored else messages.INFO)
        if skipped:
            self.message_user(
                request, f"{skipped} entries exist again already and were left as they are.", messages.WARNING
            )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: MemoryEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: MemoryEvent | None = None) -> bool:
        return False


@admin.register(SyncTask)
class SyncTaskAdmin(NamesShown):
    """The sync outbox, read-only, with one action: put failed tasks back in the queue."""

    list_display = [
        "shown_uid",
        "shown_key",
        "operation",
        "status",
        "owner",
        "version",
        "attempts",
        "next_attempt_at",
        "pending_since",
        "last_error",
    ]
    list_filter = ["status", "operation"]
    search_fields = ["uid", "key", "session_id", "last_error"]
    list_select_related = ["owner"]
    ordering = ["-updated_at"]
    actions = ["retry_failed"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: SyncTask | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: SyncTask | None = None) -> bool:
        return False

    @admin.action(description="Retry the selected failed tasks")
    def retry_failed(self, request: HttpRequest, queryset: QuerySet[SyncTask]) -> None:
        queued = outbox.tasks_retry_failed(task_ids=queryset.values_list("id", flat=True), now=timezone.now())
        self.message_user(request, f"{queued} failed task(s) queued again.", messages.SUCCESS)


@admin.register(AccountPolicy)
class AccountPolicyAdmin(admin.ModelAdmin):
    """Each account's policy; an account without one here follows the defaults. Saved through the services."""

    list_display = ["account", "default_privacy", "guard_mode", "context_includes_flagged", "updated"]
    list_filter = ["default_privacy", "guard_mode", "context_includes_flagged"]
    search_fields = ["account__username"]
    list_select_related = ["account"]
    ordering = ["account__username"]
    fields = ["account", "default_privacy", "guard_mode", "context_includes_flagged", "updated"]
    readonly_fields = ["updated"]

    def get_readonly_fields(self, request: HttpRequest, obj: AccountPolicy | None = None) -> list[str]:
        # A policy belongs to its account for good: another account gets its own.
        return ["account", *self.readonly_fields] if obj is not None else list(self.readonly_fields)

    def save_model(self, request: HttpRequest, obj: AccountPolicy, form: forms.ModelForm, change: bool) -> None:
        policy = services.account_policy_set(
            account=obj.account,
            default_privacy=obj.default_privacy,
            guard_mode=obj.guard_mode,
            context_includes_flagged=obj.context_includes_flagged,
        )
        obj.pk = policy.pk
        obj.updated = policy.updated
