"""Sync status: GET /api/v1/sync/status, the sync field of /api/v1/info, and the admin's outbox."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from memories import outbox, services
from memories.models import SyncTask


@pytest.fixture
def queued(owner, stranger, settings):
    settings.MEMORYHUB_HONCHO_SYNC = True
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")
    services.entry_put(owner=owner, uid="alice", key="shell", value="fish")
    services.entry_put(owner=stranger, uid="bob", key="secret", value="hunter2")
    SyncTask.objects.filter(owner=stranger).update(
        status=SyncTask.Status.FAILED, last_error="stranger's own error", last_error_at=timezone.now()
    )


def test_an_account_sees_the_sync_status_of_its_own_entries_only(owner_api, queued):
    status = owner_api.get("/api/v1/sync/status").json()

    assert {key: status[key] for key in ("enabled", "scope", "pending", "failed", "last_success", "last_error")} == {
        "enabled": True,
        "scope": "account",
        "pending": 2,
        "failed": 0,
        "last_success": None,
        "last_error": "",
    }
    assert 0 <= status["oldest_pending_seconds"] < 60


def test_staff_see_the_whole_hubs_sync_status(staff_api, queued):
    status = staff_api.get("/api/v1/sync/status/").json()
    assert (status["scope"], status["pending"], status["failed"], status["last_error"]) == (
        "hub",
        2,
        1,
        "stranger's own error",
    )


def test_sync_status_needs_credentials(anonymous_api, db):
    assert anonymous_api.get("/api/v1/sync/status").status_code in (401, 403)


def test_info_says_whether_sync_is_on_and_the_accounts_waiting_changes(owner_api, queued, settings):
    assert owner_api.get("/api/v1/info").json()["sync"] == {"enabled": True, "pending": 2, "failed": 0}
    settings.MEMORYHUB_HONCHO_SYNC = False
    assert owner_api.get("/api/v1/info").json()["sync"] == {"enabled": False}


def test_the_admin_lists_the_outbox_and_retries_failed_tasks(client, staff, stranger, queued):
    client.force_login(staff)
    listing = client.get("/admin/memories/synctask/?status=failed")
    failed = SyncTask.objects.get(status=SyncTask.Status.FAILED)
    assert listing.status_code == 200 and "stranger&#x27;s own error" in listing.content.decode()

    response = client.post(
        "/admin/memories/synctask/",
        {"action": "retry_failed", "_selected_action": [task.pk for task in SyncTask.objects.all()]},
    )

    assert response.status_code == 302
    failed.refresh_from_db()
    assert (failed.status, failed.attempts) == (SyncTask.Status.PENDING, 0)
    assert SyncTask.objects.filter(status=SyncTask.Status.PENDING).count() == 3
    assert outbox.tasks_retry_failed(now=timezone.now()) == 0


def test_the_overview_shows_the_accounts_sync_status_when_sync_is_on(owner_client, queued):
    page = owner_client.get("/").content.decode()

    assert "Sync to Honcho" in page
    assert "2 pending" in page
    assert "stranger's own error" not in page, "another account's sync error is never shown"


def test_the_overview_has_no_sync_panel_and_no_sync_query_when_sync_is_off(owner, owner_client, settings):
    settings.MEMORYHUB_HONCHO_SYNC = False
    services.entry_put(owner=owner, uid="alice", key="editor", value="vim")

    with CaptureQueriesContext(connection) as queries:
        page = owner_client.get("/").content.decode()

    assert "Sync to Honcho" not in page
    assert not [query["sql"] for query in queries.captured_queries if SyncTask._meta.db_table in query["sql"]]
