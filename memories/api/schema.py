"""Schema post-processing: the error answers every operation can give, documented once.

The views document what is particular to them (201, 409, 412); the answers that come from the
framework around them (bad input, credentials, a missing entry, the body and rate limits) are
added here to every operation, so the schema lists every status a client can meet.
"""

from typing import Any

ERROR_SCHEMA_NAME = "Error"
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": 'DRF\'s error shape: {"detail": "..."} or, for bad fields, {"field": ["message naming the limit"]}.',
    "additionalProperties": True,
}
COMMON_ERRORS = {
    "400": "Bad input: the answer names the field and the limit.",
    "401": "No credentials, or a token that is unknown or revoked.",
    "403": "The account may not do this.",
    "404": "No such entry, user or page for this account (another account's look the same).",
    "429": "Over the token's rate limit (MEMORYHUB_RATE_LIMIT); Retry-After says when to come back.",
    "503": 'The database cannot answer for now; Retry-After says when to come back. "code": "database_busy" '
    '(rolled back: nothing was written, send it again as it was) or "database_unreachable" (a change asked for '
    "may or may not have been made: read it first).",
}
# The statuses whose answer carries Retry-After.
RETRY_AFTER_CODES = ("429", "503")
BODY_ERRORS = {
    "413": "The request body is over MEMORYHUB_MAX_BODY_BYTES.",
    "415": "The body is not JSON.",
}
HTTP_METHODS = ("get", "put", "post", "patch", "delete")


def document_error_responses(
    result: dict[str, Any], generator: object, request: object, public: bool
) -> dict[str, Any]:
    """drf-spectacular post-processing hook: add the common error answers to every operation."""
    result.setdefault("components", {}).setdefault("schemas", {})[ERROR_SCHEMA_NAME] = ERROR_SCHEMA
    reference = {"$ref": f"#/components/schemas/{ERROR_SCHEMA_NAME}"}
    for path_item in result.get("paths", {}).values():
        for method in HTTP_METHODS:
            operation = path_item.get(method)
            if operation is None:
                continue
            errors = dict(COMMON_ERRORS)
            if "requestBody" in operation or method in ("post", "put", "patch"):
                errors.update(BODY_ERRORS)
            responses = operation.setdefault("responses", {})
            for code, description in errors.items():
                if code in responses:
                    continue
                responses[code] = {"description": description, "content": {"application/json": {"schema": reference}}}
                if code in RETRY_AFTER_CODES:
                    responses[code]["headers"] = {
                        "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."}
                    }
    return result


# Fields a list's results have only when the list is a search (?q=): documented, but not required.
SEARCH_ONLY_FIELDS = {"SearchResult": ("score", "matched_terms")}


def document_search_only_fields(
    result: dict[str, Any], generator: object, request: object, public: bool
) -> dict[str, Any]:
    """drf-spectacular post-processing hook: a memories list has score and matched_terms only with ?q=."""
    schemas = result.get("components", {}).get("schemas", {})
    for name, fields in SEARCH_ONLY_FIELDS.items():
        if name in schemas:
            schemas[name]["required"] = [field for field in schemas[name].get("required", []) if field not in fields]
    return result
