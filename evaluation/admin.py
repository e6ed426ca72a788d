"""Stored evaluations in the admin: to read, never to edit (a run is a measurement)."""

from django.contrib import admin
from django.http import HttpRequest

from evaluation.models import BackendResult, EvaluationRun


class ReadOnlyAdminMixin:
    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class BackendResultInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = BackendResult
    fields = (
        "name", "available", "cloud", "put_ok", "get_ok", "find_ok", "put_p50_ms", "get_p50_ms", "find_p50_ms",
        "score", "grade", "reason",
    )  # fmt: skip
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(EvaluationRun)
class EvaluationRunAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["requested", "status", "ops", "recommendation", "requested_by"]
    list_filter = ["status"]
    list_select_related = ["requested_by"]
    date_hierarchy = "requested"
    fields = (
        "requested", "status", "error", "attempts", "started", "finished", "ops", "backends", "recommendation",
        "requested_by",
    )  # fmt: skip
    readonly_fields = fields
    inlines = [BackendResultInline]

    def has_view_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return bool(request.user.is_active and request.user.is_staff)
