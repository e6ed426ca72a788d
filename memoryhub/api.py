"""The API plumbing that both apps share: errors, pagination, the JSON parser and the rate limit.

REST_FRAMEWORK in settings names the classes here. rest_framework.views imports this module while it
loads (for the default throttle), so nothing here imports rest_framework.views at import time.
"""

import hashlib
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
from rest_framework.throttling import SimpleRateThrottle

from memories.services import BatchRejected, EntryExists, EntryNotFound, VersionConflict
from memories.validation import InvalidField

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


class TokenRateThrottle(SimpleRateThrottle):
    """Counts requests per API token (per account for a logged-in session); no limit when the rate is empty.

    The rate is read from settings on every request, so a changed setting applies at once.
    """

    scope = "token"

    def get_rate(self) -> str | None:
        return settings.MEMORYHUB_RATE_LIMIT or None

    def get_cache_key(self, request: Request, view: "APIView") -> str:
        token_key = getattr(request.auth, "key", None)
        if token_key:
            # The counter is named after a digest: the token itself never lands in the cache.
            ident = "token-" + hashlib.sha256(token_key.encode()).hexdigest()[:32]
        elif request.user and request.user.is_authenticated:
            ident = f"account-{request.user.pk}"
        else:
            ident = f"address-{self.get_ident(request) or 'unknown'}"
        return self.cache_format % {"scope": self.scope, "ident": ident}
