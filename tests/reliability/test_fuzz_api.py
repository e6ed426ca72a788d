"""Schemathesis fuzzes every operation of /api/schema/ as a real account: no 5xx, and every answer
(status, content type, headers, body) is one the schema documents."""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from memories import services
from memoryhub.wsgi import application
from tests.support.figures import FigureCounter

pytestmark = pytest.mark.slow

EXAMPLES_PER_OPERATION = 25
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
FIGURES = FigureCounter("schemathesis fuzzing")


@pytest.fixture(autouse=True, scope="module")
def _record_figures():
    yield
    FIGURES.record()


@pytest.fixture
def keep_the_test_connection():
    """Schemathesis calls the WSGI app directly; as Django's test client does, keep the end of each
    request from closing the connection that holds the test's transaction (it would on PostgreSQL)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def fuzzed_account(owner, settings, keep_the_test_connection):
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
    response = case.call_and_validate(headers={"Authorization": f"Token {token}"}, checks=CHECKS)
    FIGURES.count(response.status_code)
