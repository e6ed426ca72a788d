"""Settings come from the environment; a bad value stops the hub at start-up with a clear message."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_settings(**env: str) -> subprocess.CompletedProcess:
    clean = {key: value for key, value in os.environ.items() if key not in ("SECRET_KEY", "DEBUG", "DATABASE_URL")}
    clean.update(env)
    clean["DJANGO_SETTINGS_MODULE"] = "memoryhub.settings"
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.DATABASES['default']['ENGINE'], settings.DEBUG)"
    )
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=60)


@pytest.mark.slow
def test_without_a_secret_key_the_hub_refuses_to_start_unless_debug():
    refused = _load_settings()
    debug = _load_settings(DEBUG="1")

    assert refused.returncode != 0
    assert "SECRET_KEY is not set" in refused.stderr
    assert debug.returncode == 0, debug.stderr
    assert debug.stdout.split() == ["memoryhub.sqlite", "True"]


@pytest.mark.slow
def test_database_url_selects_postgresql():
    loaded = _load_settings(SECRET_KEY="k", DATABASE_URL="postgres://hub:pw@127.0.0.1:5432/hub")

    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split()[0] == "memoryhub.postgresql"


@pytest.mark.slow
def test_postgresql_connections_write_dates_in_iso_whatever_the_server_says_and_keep_the_urls_options():
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.DATABASES['default']['OPTIONS']['options'])"
    )
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL",)}
    env.update(SECRET_KEY="k", DJANGO_SETTINGS_MODULE="memoryhub.settings")
    plain, with_options = (
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env={**env, "DATABASE_URL": url},
            capture_output=True,
            text=True,
            timeout=60,
        )
        for url in (
            "postgres://hub:pw@127.0.0.1:5432/hub",
            "postgres://hub:pw@127.0.0.1:5432/hub?options=-c%20search_path%3Dhub",
        )
    )

    assert plain.stdout.strip() == "-c datestyle=ISO", plain.stderr
    assert with_options.stdout.strip() == "-c search_path=hub -c datestyle=ISO", with_options.stderr


@pytest.mark.slow
def test_postgresql_statements_are_bound_and_prepared_by_the_server_unless_turned_off():
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "options = settings.DATABASES['default']['OPTIONS']; "
        "print(options.get('server_side_binding'), options.get('prepare_threshold'))"
    )
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "DB_SERVER_SIDE_BINDING")}
    env.update(SECRET_KEY="k", DJANGO_SETTINGS_MODULE="memoryhub.settings", DATABASE_URL="postgres://hub:pw@h/hub")
    default, off = (
        subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, env=env | extra, capture_output=True, text=True, timeout=60
        )
        for extra in ({}, {"DB_SERVER_SIDE_BINDING": "0"})
    )

    assert default.stdout.strip() == "True 5", default.stderr
    assert off.stdout.strip() == "None None", off.stderr


@pytest.mark.slow
def test_a_bad_boolean_or_number_is_named():
    bad_bool = _load_settings(SECRET_KEY="k", DEBUG="maybe")
    bad_int = _load_settings(SECRET_KEY="k", MEMORYHUB_MAX_VALUE_BYTES="lots")

    assert "DEBUG must be one of" in bad_bool.stderr
    assert "MEMORYHUB_MAX_VALUE_BYTES must be a whole number" in bad_int.stderr


@pytest.mark.slow
def test_a_default_page_size_above_the_cap_is_named():
    too_big = _load_settings(SECRET_KEY="k", MEMORYHUB_PAGE_SIZE="600", MEMORYHUB_MAX_PAGE_SIZE="500")

    assert too_big.returncode != 0
    assert "MEMORYHUB_PAGE_SIZE must be at most MEMORYHUB_MAX_PAGE_SIZE (500); got 600" in too_big.stderr


@pytest.mark.slow
def test_the_default_database_is_sqlite_under_the_data_dir_in_wal_mode(tmp_path):
    code = (
        "import django; django.setup(); from django.db import connection; c = connection.cursor(); "
        "c.execute('PRAGMA journal_mode'); print(c.fetchone()[0]); "
        "c.execute('PRAGMA busy_timeout'); print(c.fetchone()[0]); "
        "print(connection.settings_dict['NAME'])"
    )
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env.update(SECRET_KEY="k", MEMORYHUB_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="memoryhub.settings")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)

    assert result.returncode == 0, result.stderr
    journal, busy_timeout, name = result.stdout.split()
    assert journal == "wal"
    assert int(busy_timeout) >= 1000
    assert name == str(tmp_path / "memoryhub.sqlite3")


def test_writes_take_the_lock_at_begin_on_sqlite_and_postgresql_requests_pay_no_health_check(settings):
    database = settings.DATABASES["default"]
    if database["ENGINE"] == settings.SQLITE_ENGINE:
        assert database["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    else:
        # A health check is a round trip before each request's first query (DB_CONN_HEALTH_CHECKS=1 turns it on).
        assert database["CONN_HEALTH_CHECKS"] is False
