"""Domain errors mapped to DRF's error shape, in one place."""

from typing import Any

from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from memories.services import BatchRejected, EntryExists, EntryNotFound, VersionConflict
from memories.validation import InvalidField


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
        exc = exceptions.ValidationError({"operations": exc.errors})
    elif isinstance(exc, EntryNotFound):
        exc = exceptions.NotFound()
    elif isinstance(exc, EntryExists):
        exc = Conflict()
    elif isinstance(exc, VersionConflict):
        exc = PreconditionFailed(
            f"The entry is at version {exc.current}." if exc.current else "The entry does not exist."
        )
    return drf_exception_handler(exc, context)
