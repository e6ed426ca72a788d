"""The README's ten-line agent, run as its reader would run it: its output is the one the README shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from live_hub import Hub

README = Path(__file__).resolve().parents[1] / "README.md"
# The client next to these tests, as conftest puts it first on the path.
SOURCE = Path(__file__).resolve().parents[1] / "src"


def _section(text: str, heading: str) -> str:
    start = text.index(f"## {heading}\n")
    following = text.find("\n## ", start + 1)
    return text[start : following if following != -1 else len(text)]


def test_the_ten_line_agent_prints_what_the_readme_shows(hub: Hub, tmp_path: Path) -> None:
    section = _section(README.read_text(), "A ten-line agent")
    program = re.search(r"```python\n(.*?)```", section, re.S)
    console = re.search(r"```console\n\$ printf '(.*?)' \| python agent.py\n(.*?)```", section, re.S)
    assert program is not None and console is not None
    assert len(program.group(1).strip().splitlines()) <= 11  # ten lines and the blank one after the imports
    agent = tmp_path / "agent.py"
    agent.write_text(program.group(1))

    completed = subprocess.run(
        [sys.executable, str(agent)],
        input=console.group(1).replace("\\n", "\n"),
        env={**os.environ, "MEMORYHUB_URL": hub.url, "MEMORYHUB_TOKEN": hub.readme_token, "PYTHONPATH": str(SOURCE)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == console.group(2)
