"""The live hub of the client's tests: the hub's own test helper (tests/support/hub_process.py of
this repository: `make serve`'s server on a free loopback port, over a fresh database, SQLite in a
temporary folder or, when DATABASE_URL names PostgreSQL, a database of its own on that server,
dropped afterwards), with the accounts these tests use. Never a mock.

MEMORYHUB_HUB_DIR names another checkout of the hub to test against.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[3]
# These tests are collected beside the hub's own (pytest.ini's testpaths), or alone from this folder:
# either way the hub's test helper is imported from the repository's root.
if str(REPOSITORY) not in sys.path:
    sys.path.insert(0, str(REPOSITORY))

from tests.support.hub_process import HubDatabase, hub_database, hub_environment, running_hub  # noqa: E402

HUB_DIR = Path(os.environ.get("MEMORYHUB_HUB_DIR") or REPOSITORY)
# The throttled server's limit: a burst of requests meets 429 at once, and Retry-After is about a second.
THROTTLED_RATE = "5/second"

__all__ = [
    "HUB_DIR",
    "SETUP_SCRIPT",
    "THROTTLED_RATE",
    "Hub",
    "HubDatabase",
    "hub_database",
    "hub_environment",
    "running_hub",
]


@dataclass(frozen=True)
class Hub:
    url: str
    token: str
    stranger_token: str
    # An account of its own for the README's examples, whose users are fixed names.
    readme_token: str
    # An account whose write guard holds a suspect write for review (guard mode hold).
    guarded_token: str
    environment: dict[str, str]


# Run once in the hub's own Python: migrate, make the accounts (printing their tokens) and store one
# evaluation run, in one process rather than a Django start-up for each.
SETUP_SCRIPT = """
import io, json, django
django.setup()
from django.core.management import call_command
call_command("migrate", interactive=False, verbosity=0)
tokens = {}
for name in ("agent", "stranger", "readme", "guarded"):
    out = io.StringIO()
    call_command("create_account", name, stdout=out)
    tokens[name] = out.getvalue().strip()
call_command("account_policy", "guarded", guard="hold", stdout=io.StringIO())
call_command("evaluate", backend=["null"], ops=1, stdout=io.StringIO())
print(json.dumps(tokens))
"""
