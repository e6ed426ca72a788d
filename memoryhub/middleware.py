"""Middleware of the project itself."""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse


class RequestBodyLimitMiddleware:
    """Refuses a request whose body is larger than DATA_UPLOAD_MAX_MEMORY_SIZE (MEMORYHUB_MAX_BODY_BYTES)
    with 413, before anything reads it.

    Django applies that limit only when it reads the body itself (request.body, form data); the
    REST framework's JSON parser reads the stream directly and would take a body of any size.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        declared = request.META.get("CONTENT_LENGTH") or "0"
        if not declared.isascii() or not declared.isdigit():
            return JsonResponse({"detail": "Content-Length must be a whole number of bytes."}, status=400)
        if limit is not None and int(declared) > limit:
            return JsonResponse(
                {
                    "detail": (
                        f"The request body is {int(declared)} bytes; the limit is {limit} bytes "
                        "(MEMORYHUB_MAX_BODY_BYTES)."
                    )
                },
                status=413,
            )
        return self.get_response(request)
