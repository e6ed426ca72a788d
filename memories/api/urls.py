"""The API's routes, under /api/v1/: the viewsets on one router. A trailing slash is optional on every path.

Memories are nested under their user: the memory viewset's prefix holds the uid. Its batch action
(users/{uid}/memories/batch) is routed before the entry (users/{uid}/memories/{key}) and takes POST
alone; every other method there reaches the entry whose key is "batch".
"""

from memories.api import views
from memoryhub.routers import HubRouter

router = HubRouter()
router.register("users", views.UserViewSet, basename="user")
router.register(rf"users/(?P<uid>{views.SEGMENT})/memories", views.MemoryViewSet, basename="memory")
router.register("held", views.HeldWriteViewSet, basename="held-write")
router.register("info", views.InfoViewSet, basename="info")
router.register("sync/status", views.SyncStatusViewSet, basename="sync-status")
router.register("tool", views.ToolViewSet, basename="tool")

urlpatterns = router.urls
