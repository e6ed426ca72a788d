"""The command line as a new user meets it: commands that paste, configuration mistakes in one line."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from memoryhub.preflight import port_problem

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str], env: dict[str, str], *, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    clean = {name: value for name, value in os.environ.items() if name not in ("SECRET_KEY", "DATABASE_URL", "DEBUG")}
    return subprocess.run(args, env={**clean, **env}, cwd=cwd, capture_output=True, text=True, timeout=60)


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return _run([sys.executable, str(ROOT / "manage.py"), *args], env)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    return folder


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"MEMORYHUB_RATE_LIMIT": "lots"}, "MEMORYHUB_RATE_LIMIT"),
        ({"DATABASE_URL": "postgres://hub:secret@127.0.0.1:1/hub"}, "DATABASE_URL"),
        ({"MEMORYHUB_DATA_DIR": "/proc/no-such-folder"}, "MEMORYHUB_DATA_DIR"),
        ({"MEMORYHUB_DATA_DIR": "/etc/hostname"}, "MEMORYHUB_DATA_DIR"),
        ({"TIME_ZONE": "Mars/Base"}, "TIME_ZONE"),
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL"),
        ({"DATABASE_URL": "mysql://hub:secret@127.0.0.1/hub"}, "DATABASE_URL"),
    ],
)
def test_a_configuration_mistake_is_one_line_naming_the_setting(env: dict[str, str], named: str) -> None:
    result = _manage("migrate", "--noinput", SECRET_KEY="test-only-not-secret", **env)

    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 2, result.stderr
    assert named in lines[0]
    assert "Traceback" not in result.stderr
    assert "secret@" not in result.stderr  # a database password is never printed


def test_a_missing_secret_key_says_how_to_make_one(data_dir: Path) -> None:
    result = _manage("check", MEMORYHUB_DATA_DIR=str(data_dir))

    assert result.returncode == 2
    assert "SECRET_KEY" in result.stderr and "make run" in result.stderr
    assert "Traceback" not in result.stderr


def test_verbosity_two_or_debug_shows_the_whole_traceback() -> None:
    verbose = _manage("check", "-v", "2", SECRET_KEY="x", MEMORYHUB_RATE_LIMIT="lots")
    debug = _manage("check", SECRET_KEY="x", MEMORYHUB_RATE_LIMIT="lots", DEBUG="1")

    for result in (verbose, debug):
        assert result.returncode != 0
        assert "Traceback" in result.stderr and "MEMORYHUB_RATE_LIMIT" in result.stderr


def test_commands_find_the_secret_key_that_make_run_keeps(data_dir: Path) -> None:
    (data_dir / "secret_key").write_text("a-key-kept-by-make-run\n")

    result = _manage("check", MEMORYHUB_DATA_DIR=str(data_dir))

    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_the_hub_script_runs_a_command_as_pasted(data_dir: Path) -> None:
    (data_dir / "secret_key").write_text("a-key-kept-by-make-run\n")

    result = _run([str(ROOT / "hub"), "check"], {"MEMORYHUB_DATA_DIR": str(data_dir)}, cwd=data_dir)

    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_make_keeps_the_secret_key_where_the_hub_script_looks_for_it(data_dir: Path) -> None:
    # MEMORYHUB_DATA_DIR moves the key with the data: `make serve` and `./hub work --loop` run with the same one.
    environment = {"MEMORYHUB_DATA_DIR": str(data_dir)}
    made = _run(["make", "-C", str(ROOT), "--no-print-directory", str(data_dir / "secret_key")], environment)
    result = _run([str(ROOT / "hub"), "check"], environment, cwd=data_dir)

    assert made.returncode == 0, made.stderr
    assert len((data_dir / "secret_key").read_text().strip()) >= 50
    assert result.returncode == 0, result.stderr
    assert "no issues" in result.stdout


def test_a_port_in_use_is_named_with_the_setting_that_moves_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        problem = port_problem("127.0.0.1", port)
        result = _run([sys.executable, "-m", "memoryhub.preflight", "127.0.0.1", str(port)], {})

    assert problem is not None and f"PORT={port + 1}" in problem
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert port_problem("127.0.0.1", port) is None  # free again once released


@pytest.mark.parametrize("level", ["WARN", "fatal", "notset", "Debug"])
def test_every_level_name_pythons_logging_takes_is_taken(level: str) -> None:
    result = _manage("check", SECRET_KEY="test-only-not-secret", LOG_LEVEL=level)

    assert result.returncode == 0, result.stderr
