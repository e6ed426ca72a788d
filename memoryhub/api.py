"""The API plumbing that both apps share: errors, pagination, the JSON parser and the rate limit.

REST_FRAMEWORK in settings names the classes here. rest_framework.views imports this module while it
loads (for the default throttle), so nothing here imports rest_framework.views at import time.
"""

import hashlib
import time
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.exceptions import ParseError
from rest_framework.pagination import PageNumberPagination
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import BaseThrottle

from memories.services import BatchRejected, EntryExists, EntryNotFound, VersionConflict
from memories.validation import InvalidField
from memoryhub.ratelimit import parse_rate, rate_window

if TYPE_CHECKING:
    from rest_framework.views import APIView


class PreconditionFailed(exceptions.APIException):
    status_code = status.HTTP_412_PRECONDITION_FAILED
    default_detail = "The entry has changed since the version given in If-Match."
    default_code = "precondition_failed"


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The entry exists; there is nothing to restore."
    default_code = "conflict"


class ErrorDetailSerializer(serializers.Serializer):
    """DRF's error shape for anything that is not a field error."""

    detail = serializers.CharField()


PRECONDITION_FAILED = OpenApiResponse(
    ErrorDetailSerializer, description="If-Match names a version the entry is not at."
)
ENTRY_EXISTS = OpenApiResponse(ErrorDetailSerializer, description="The entry exists; there is nothing to restore.")


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, InvalidField):
        exc = exceptions.ValidationError({exc.field: [exc.message]})
    elif isinstance(exc, BatchRejected):
        # JSON keys are text: the operation's index as a string, as the body always showed it.
        exc = exceptions.ValidationError({"operations": {str(index): errors for index, errors in exc.errors.items()}})
    elif isinstance(exc, EntryNotFound):
        exc = exceptions.NotFound()
    elif isinstance(exc, EntryExists):
        exc = Conflict()
    elif isinstance(exc, VersionConflict):
        exc = PreconditionFailed(
            f"The entry is at version {exc.current}." if exc.current else "The entry does not exist."
        )
    # Imported here: rest_framework.views imports this module (for the throttle) while it loads.
    from rest_framework.views import exception_handler as drf_exception_handler

    return drf_exception_handler(exc, context)


class MemoryPagination(PageNumberPagination):
    """Numbered pages: ?page=N&page_size=M, M capped at MEMORYHUB_MAX_PAGE_SIZE."""

    page_size_query_param = "page_size"

    # Properties, not DRF's plain attributes, so the settings are read per request (and a test's override holds).
    @property
    def page_size(self) -> int:  # type: ignore[override]
        return settings.MEMORYHUB_PAGE_SIZE

    @property
    def max_page_size(self) -> int:  # type: ignore[override]
        return settings.MEMORYHUB_MAX_PAGE_SIZE


class HubJSONParser(JSONParser):
    """Parses JSON bodies; a body nested deeper than the decoder can follow is a 400, not a 500.

    Values nested deeper than the hub keeps (validation.META_MAX_DEPTH) get their own 400 naming
    the field after parsing.
    """

    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply.") from None


class TokenRateThrottle(BaseThrottle):
    """Counts requests per API token (per account for a logged-in session); no limit when the rate is empty.

    Fixed windows aligned to the clock, counted in memoryhub.ratelimit (shared memory on one
    machine, or Redis). The rate is read from settings on every request, so a changed setting
    applies at once. Refused requests count too: a client that keeps knocking waits the window out.
    """

    def __init__(self) -> None:
        self.retry_after = 0.0

    def allow_request(self, request: Request, view: "APIView") -> bool:
        if not settings.MEMORYHUB_RATE_LIMIT:
            return True
        rate = parse_rate(settings.MEMORYHUB_RATE_LIMIT)
        window = rate_window(self.ident_of(request), rate)
        if window.count <= rate.limit:
            return True
        self.retry_after = max(window.ends_at - time.time(), 1.0)
        return False

    def wait(self) -> float:
        return self.retry_after

    def ident_of(self, request: Request) -> str:
        token_key = getattr(request.auth, "key", None)
        if token_key:
            # The counter is named after a digest: the token itself never lands in the counters.
            return "token-" + hashlib.sha256(token_key.encode()).hexdigest()[:32]
        if request.user and request.user.is_authenticated:
            return f"account-{request.user.pk}"
        return f"address-{self.get_ident(request) or 'unknown'}"
