"""Domain errors mapped to DRF's error shape, in one place."""

from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from memories.services import BatchRejected, EntryNotFound, VersionConflict
from memories.validation import InvalidField


class PreconditionFailed(exceptions.APIException):
    status_code = status.HTTP_412_PRECONDITION_FAILED
    default_detail = "The entry has changed since the version given in If-Match."
    default_code = "precondition_failed"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, InvalidField):
        exc = exceptions.ValidationError({exc.field: [exc.message]})
    elif isinstance(exc, BatchRejected):
        exc = exceptions.ValidationError({"operations": exc.errors})
    elif isinstance(exc, EntryNotFound):
        exc = exceptions.NotFound()
    elif isinstance(exc, VersionConflict):
        exc = PreconditionFailed(
            f"The entry is at version {exc.current}." if exc.current else "The entry does not exist."
        )
    return drf_exception_handler(exc, context)
