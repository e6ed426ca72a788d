"""The API's routes, under /api/v1/. A trailing slash is optional on every path.

uid and key are one path segment each: a key holding '/' is reached through the tool endpoint or
POST with the key in the body.
"""

from django.urls import re_path

from memories.api import views

SEGMENT = r"[^/]+"

urlpatterns = [
    re_path(r"^users/?$", views.UserListView.as_view(), name="user-list"),
    re_path(rf"^users/(?P<uid>{SEGMENT})/?$", views.UserDetailView.as_view(), name="user-detail"),
    re_path(rf"^users/(?P<uid>{SEGMENT})/memories/?$", views.MemoryListView.as_view(), name="memory-list"),
    # POST only: a GET or PUT to .../memories/batch falls through to the entry whose key is "batch".
    re_path(rf"^users/(?P<uid>{SEGMENT})/memories/batch/?$", views.MemoryBatchView.as_view(), name="memory-batch"),
    re_path(
        rf"^users/(?P<uid>{SEGMENT})/memories/(?P<key>{SEGMENT})/history/?$",
        views.MemoryHistoryView.as_view(),
        name="memory-history",
    ),
    re_path(
        rf"^users/(?P<uid>{SEGMENT})/memories/(?P<key>{SEGMENT})/restore/?$",
        views.MemoryRestoreView.as_view(),
        name="memory-restore",
    ),
    re_path(
        rf"^users/(?P<uid>{SEGMENT})/memories/(?P<key>{SEGMENT})/?$",
        views.MemoryDetailView.as_view(),
        name="memory-detail",
    ),
    re_path(r"^info/?$", views.InfoView.as_view(), name="info"),
    re_path(r"^sync/status/?$", views.SyncStatusView.as_view(), name="sync-status"),
    re_path(r"^tool/schema/?$", views.ToolSchemaView.as_view(), name="tool-schema"),
    re_path(r"^tool/?$", views.ToolView.as_view(), name="tool"),
]
