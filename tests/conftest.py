"""Fixtures shared by every test: three parties in every scenario.

owner: the account whose memories a test is about; stranger: another account of the same hub;
anonymous: no credentials at all. Each API client is authenticated with the account's real token.
"""

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

import tests.support.examples  # noqa: F401  (registers the fast hypothesis profile)
from memories.accounts import account_create
from memories.embeddings import get_provider
from memories.embeddings.local import LocalProvider
from memories.embeddings.queries import QueryCachedProvider
from tests.support import collection
from tests.support import database as test_databases


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Test modules (and folders of them) marked as a whole with marks that -m leaves out are not even imported."""
    return True if collection.ignored(collection_path, config) else None


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _client_for(account: User) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get(user=account).key}")
    return client


@pytest.fixture
def owner(db) -> User:
    account, _ = account_create(username="owner", password="owner-password-1")
    return account


@pytest.fixture
def stranger(db) -> User:
    account, _ = account_create(username="stranger", password="stranger-password-1")
    return account


@pytest.fixture
def staff(db) -> User:
    account, _ = account_create(username="staffer", staff=True, password="staff-password-1")
    return account


@pytest.fixture
def owner_api(owner: User) -> APIClient:
    return _client_for(owner)


@pytest.fixture
def stranger_api(stranger: User) -> APIClient:
    return _client_for(stranger)


@pytest.fixture
def staff_api(staff: User) -> APIClient:
    return _client_for(staff)


@pytest.fixture
def anonymous_api(db) -> APIClient:
    return APIClient()


@pytest.fixture
def owner_client(owner: User) -> Client:
    """A browser session logged in to the dashboard as owner."""
    client = Client()
    client.force_login(owner)
    return client


@pytest.fixture
def stranger_client(stranger: User) -> Client:
    client = Client()
    client.force_login(stranger)
    return client


@pytest.fixture
def staff_client(staff: User) -> Client:
    client = Client()
    client.force_login(staff)
    return client


@pytest.fixture(scope="session")
def django_db_modify_db_settings(
    django_db_modify_db_settings_parallel_suffix, tmp_path_factory, django_db_createdb: bool
) -> bool:
    """On SQLite, test in a database file rather than shared memory, so that tests with several
    connections at once (sync workers in threads) lock as the hub does: waiting on the busy timeout,
    where shared memory fails at once with "database table is locked".

    The file starts as a copy of the migrated database kept by an earlier run with the same migrations
    (tests.support.database), unless --create-db asks for a fresh one: True when it does."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] != settings.SQLITE_ENGINE:
        return False
    test_file = tmp_path_factory.mktemp("database") / "test.sqlite3"
    database.setdefault("TEST", {})["NAME"] = str(test_file)
    return not django_db_createdb and test_databases.template_restore(test_file)


@pytest.fixture(scope="session")
def django_db_keepdb(django_db_keepdb: bool, django_db_modify_db_settings: bool) -> bool:
    """Keep the copy of the migrated database (Django would delete the file and migrate an empty one)."""
    return django_db_keepdb or django_db_modify_db_settings


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_modify_db_settings: bool, django_db_blocker) -> None:
    """The test databases, as pytest-django makes them; a SQLite one just migrated is kept for later runs."""
    from django.db import connection

    if connection.vendor == "sqlite" and not django_db_modify_db_settings:
        test_databases.template_keep(Path(connection.settings_dict["NAME"]))


@pytest.fixture(scope="session")
def local_embedding_model() -> LocalProvider:
    """The real local embedding model, loaded once per test process: the instance get_provider() keeps for
    MEMORYHUB_EMBEDDINGS=local, so the tests that embed through the hub share it too."""
    with override_settings(MEMORYHUB_EMBEDDINGS="local"):
        provider = get_provider()
    assert isinstance(provider, QueryCachedProvider) and isinstance(provider.provider, LocalProvider)
    return provider.provider


REDIS_START_SECONDS = 10


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Redis server's URL: the one MEMORYHUB_TEST_REDIS_URL names (.ci/run starts one), else a
    redis-server of this machine's started on a free loopback port for the session."""
    url = os.environ.get("MEMORYHUB_TEST_REDIS_URL", "")
    if url:
        yield url
        return
    binary = shutil.which("redis-server")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("no Redis server: CI runs the Redis tests against a real one (.ci/run starts it)")
        pytest.skip("no redis-server on this machine and MEMORYHUB_TEST_REDIS_URL unset (.ci/run provides one)")
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
    folder = tmp_path_factory.mktemp("redis")
    command = [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    server = subprocess.Popen([*command, "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + REDIS_START_SECONDS
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as probe:
                    probe.sendall(b"PING\r\n")
                    if probe.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                pytest.fail(f"redis-server did not answer on 127.0.0.1:{port}")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.terminate()
        server.wait(timeout=10)
