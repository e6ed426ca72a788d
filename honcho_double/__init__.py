"""A stand-in for a Honcho server, for tests and demonstrations. Never imported by the hub itself.

Built from the real server's OpenAPI document and a verbatim wire log (../shared/honcho/), it answers
the routes the hub uses exactly as Honcho 3.0 does: the same paths, bodies, status codes (201 on
create, 200 on get, 202 on delete, 404 after a delete, 422 on bad input), page shapes and filters
(equality, metadata containment, icontains and friends, AND / OR / NOT).

Two ways to run it, one state and one set of faults behind both:

- in process: ``HonchoDouble().http_client()`` is an ``httpx.Client`` over ``httpx.MockTransport``,
  passed to the real SDK as ``Honcho(http_client=...)``; no socket is opened;
- over HTTP on 127.0.0.1: ``python -m honcho_double --port 8765`` (or ``HonchoDouble().serve()``),
  so that ``HONCHO_URL=http://127.0.0.1:8765 python manage.py evaluate`` makes real round trips.

Faults (``double.faults``) make it fail a fraction of calls with 500s, timeouts or dropped
connections, answer 401, or be unreachable: what the sync worker's tests need.
"""

from honcho_double.faults import Fault, FaultPlan
from honcho_double.server import HonchoDouble

__all__ = ["Fault", "FaultPlan", "HonchoDouble"]
