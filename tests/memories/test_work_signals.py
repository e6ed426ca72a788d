"""The worker stops on SIGTERM or SIGINT wherever the signal finds it, even inside its stop event's
own lock: there the old handler waited on that lock forever, and a `make run` stopped with Ctrl-C
(SIGINT, then SIGTERM from the Makefile's trap) could leave its worker running, hung."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# The signal arrives while the main thread holds the stop event's lock, as it does inside stop.wait()
# and stop.set(): raise_signal runs the handler there and then, deterministically.
SCENARIO = """
import os, signal, django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
django.setup()
from memories.work import run_until_signalled

class Worker:
    def run_loop(self, stop):
        with stop._cond:
            signal.raise_signal(signal.SIGTERM)
            signal.raise_signal(signal.SIGINT)
        print("stopped" if stop.wait(10) else "still running")

run_until_signalled(Worker())
print("handlers back:", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
"""


@pytest.mark.process
def test_a_signal_inside_the_stop_events_lock_stops_the_worker():
    env = {**os.environ, "SECRET_KEY": "test-only-not-secret", "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(
            [sys.executable, "-c", SCENARIO], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the worker hung on the signal instead of stopping")

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["stopped", "handlers back: True"]
