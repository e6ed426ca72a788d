"""Schemathesis fuzzes every operation of /api/schema/ as a real account: no 5xx, and every answer
(status, content type, headers, body) is one the schema documents."""

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.checks import not_a_server_error

from memories import services
from memoryhub.wsgi import application

EXAMPLES_PER_OPERATION = 25
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


schema = schemathesis.openapi.from_wsgi("/api/schema/", application)


@pytest.fixture
def fuzzed_account(owner, settings):  # noqa: ANN001, ANN201
    settings.MEMORYHUB_RATE_LIMIT = ""
    # Something to find: generated uids and keys rarely hit an existing entry, these do.
    services.entry_put(owner=owner, uid="alice", key="language", value="Python", meta={"source": "fuzz"})
    services.entry_put(owner=owner, uid="alice", key="gone", value="deleted")
    services.entry_delete(owner=owner, uid="alice", key="gone")
    return owner


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_every_operation_answers_within_its_schema_and_never_with_a_server_error(case, fuzzed_account):
    token = fuzzed_account.auth_token.key
    case.call_and_validate(headers={"Authorization": f"Token {token}"}, checks=CHECKS)
