"""GET /healthz: whether the hub can serve and its background work gets done, for a load balancer
or a monitor. No authentication, no rate limit, one database query, and left out of the access log
(memoryhub.asgi)."""

import logging

from django.db import DatabaseError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_safe

from memories.work import work_status

logger = logging.getLogger(__name__)

# Served ahead of ALLOWED_HOSTS and SECURE_SSL_REDIRECT (memoryhub.middleware.HealthCheckMiddleware).
HEALTH_PATH = "/healthz"


@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    """200 when the database answers and no work waits without a worker (`manage.py work`) seen in the
    last minute; 503 otherwise. The body says which, and how much work of each kind waits."""
    try:
        status = work_status()
    except DatabaseError as error:
        logger.warning("healthz: the database did not answer: %s", error)
        return JsonResponse({"status": "down", "database": False}, status=503)
    body = {"status": "ok" if status.healthy else "no worker", "database": True, **status.as_json()}
    return JsonResponse(body, status=200 if status.healthy else 503)
