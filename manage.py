#!/usr/bin/env python
"""MemoryHub's command line: Django's manage.py, with the hub's secret key found and its errors in one line.

When SECRET_KEY is not set, the key `make run` keeps in the data folder (data/secret_key, or
$MEMORYHUB_DATA_DIR/secret_key) is used, so a command works as pasted. A configuration mistake (a bad
setting, no key, a database that cannot be reached, a data folder that cannot be written) prints one
line that names the setting and exits with status 2; `-v 2`, `--traceback` or DEBUG=1 show the
whole traceback instead.
"""

import os
import sys
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent


def _secret_key_from_data_dir() -> None:
    if os.environ.get("SECRET_KEY"):
        return
    key_file = Path(os.environ.get("MEMORYHUB_DATA_DIR") or BASE_DIR / "data") / "secret_key"
    try:
        key = key_file.read_text().strip()
    except OSError:
        return  # settings say what is missing
    if key:
        os.environ["SECRET_KEY"] = key


def _wants_traceback(argv: list[str]) -> bool:
    if os.environ.get("DEBUG", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    for index, argument in enumerate(argv):
        if argument == "--traceback" or argument in ("-v2", "-v3", "--verbosity=2", "--verbosity=3"):
            return True
        if argument in ("-v", "--verbosity") and argv[index + 1 : index + 2] in (["2"], ["3"]):
            return True
    return False


def _shortened(error: BaseException, argv: list[str]) -> int:
    """Exit status 2 after the one line that names a configuration mistake; any other error re-raised."""
    from memoryhub.errors import configuration_error

    message = configuration_error(error)
    if message is None or _wants_traceback(argv):
        raise error
    sys.stderr.write(f"memoryhub: {message}\nmemoryhub: (run again with -v 2 or DEBUG=1 for the traceback)\n")
    return 2


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    _secret_key_from_data_dir()
    if argv[1:2] == ["mcp"] and sys.platform != "win32":
        # The stdio MCP server answers its client before Django is loaded (memories.mcp.stdio).
        from memories.mcp import stdio

        account = stdio.quick_account(argv[2:])
        if account is not None:
            return stdio.serve(account, on_error=lambda error: _shortened(error, argv))
        if argv[2:] == ["--keep-answers"]:
            # Quiet, and without loading Django while the kept answers are up to date (make install, make migrate).
            try:
                stdio.keep_answers()
            except Exception as error:  # noqa: BLE001 - only configuration errors are shortened; the rest re-raise
                return _shortened(error, argv)
            return 0
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(argv)
    except Exception as error:  # noqa: BLE001 - only configuration errors are shortened; the rest re-raise
        return _shortened(error, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
