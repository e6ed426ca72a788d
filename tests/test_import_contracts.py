"""The import-direction check that `make lint` runs refuses a back arrow.

Each test copies the project's packages and its pyproject.toml into a temporary folder, adds one
import that points the wrong way, and runs `lint-imports` on the copy: the contract it breaks is
named, and the check fails.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("memories", "evaluation", "memoryhub", "benchmarks", "honcho_double")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _project_copy(destination: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(ROOT / package, destination / package, ignore=shutil.ignore_patterns("__pycache__", "data"))
    shutil.copy(ROOT / "pyproject.toml", destination / "pyproject.toml")
    return destination


def _lint_imports(project: Path) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": str(project)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _add_import(project: Path, module: str, statement: str) -> None:
    path = project / module
    path.write_text(path.read_text() + f"\n{statement}  # a back arrow\n")


@pytest.mark.slow
def test_the_project_keeps_every_contract(tmp_path: Path) -> None:
    result = _lint_imports(_project_copy(tmp_path))

    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


# One back arrow for each contract, all in one copy (each run of the check reads every module).
BACK_ARROWS = [
    ("memories/selectors.py", "import memories.api.views", "nothing below the services imports from above them"),
    ("memories/models.py", "import evaluation.models", "memories never imports evaluation"),
    ("memories/views.py", "import benchmarks.timing", "the apps never import benchmarks"),
    ("memories/selectors.py", "import honcho", "only the Honcho backend and the sync worker import the Honcho SDK"),
]


@pytest.mark.slow
def test_an_import_pointing_the_wrong_way_fails_the_check(tmp_path: Path) -> None:
    project = _project_copy(tmp_path)
    for module, statement, _ in BACK_ARROWS:
        _add_import(project, module, statement)

    result = _lint_imports(project)

    lines = result.stdout.splitlines()
    broken = {
        contract
        for _, _, contract in BACK_ARROWS
        if any(line.startswith(contract) for line in lines if " BROKEN" in line)
    }
    assert result.returncode != 0
    assert broken == {contract for _, _, contract in BACK_ARROWS}, result.stdout
