"""The API's JSON parser: DRF's, with nesting too deep for Python's decoder answered as bad input."""

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class HubJSONParser(JSONParser):
    """Parses JSON bodies; a body nested deeper than the decoder can follow is a 400, not a 500.

    Values nested deeper than the hub keeps (validation.META_MAX_DEPTH) get their own 400 naming
    the field after parsing.
    """

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict | None = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body is nested too deeply.") from None
