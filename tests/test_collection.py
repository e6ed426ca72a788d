"""`make test-fast` leaves unimported the test modules whose every test its -m expression leaves out,
and runs exactly the tests it would run if it imported them all."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.collection import COLLECT_ALL_VARIABLE, left_out, module_marks

ROOT = Path(__file__).resolve().parent.parent
FAST = "not slow and not browser and not process"


def _module(folder: Path, text: str) -> Path:
    path = folder / "test_example.py"
    path.write_text(text)
    return path


def test_a_module_marked_as_a_whole_says_its_marks_and_other_assignments_say_none(tmp_path):
    assert module_marks(_module(tmp_path, "import pytest\npytestmark = pytest.mark.process\n")) == {"process"}
    listed = tmp_path / "listed"
    listed.mkdir()
    marks = "import pytest\npytestmark = [pytest.mark.process, pytest.mark.slow]\n"
    assert module_marks(_module(listed, marks)) == {"process", "slow"}
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    assert module_marks(_module(fixtures, 'import pytest\npytestmark = pytest.mark.usefixtures("db")\n')) == set()
    unmarked = tmp_path / "unmarked"
    unmarked.mkdir()
    assert module_marks(_module(unmarked, "def test_it():\n    pytestmark = 1\n")) == set()
    broken = tmp_path / "broken"
    broken.mkdir()
    assert module_marks(_module(broken, "pytestmark = (\n")) == set(), "left to pytest, which reports the error"


@pytest.mark.parametrize(
    ("marks", "expression", "expected"),
    [
        ({"process"}, FAST, True),
        ({"browser"}, FAST, True),
        ({"process", "slow"}, "not slow", True),
        ({"slow"}, "process", False),  # one of its tests may be marked process as well
        ({"process"}, "process", False),
        ({"process"}, "slow or not process", False),  # a test of it marked slow is selected
        ({"process"}, "not process or slow", False),
        (set(), FAST, False),
        ({"process"}, "process(reason='x') or not process", False),  # arguments: imported as usual
        ({"process"}, "", False),
        ({"process"}, "not (", False),  # pytest reports the expression
    ],
)
def test_a_module_is_left_out_only_when_none_of_its_tests_can_match(marks, expression, expected):
    assert left_out(frozenset(marks), expression) is expected


def _collected(expression: str, **environment: str) -> list[str]:
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=-p no:cacheprovider", "-m", expression],
        cwd=ROOT,
        env={**os.environ, **environment},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return sorted(line for line in completed.stdout.splitlines() if "::" in line)


@pytest.mark.slow
def test_the_fast_run_selects_the_same_tests_as_when_every_module_is_imported():
    pruned = _collected(FAST)
    everything = _collected(FAST, **{COLLECT_ALL_VARIABLE: "1"})
    assert len(pruned) > 100
    assert pruned == everything
