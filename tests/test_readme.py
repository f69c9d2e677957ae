"""The README's test command is what CI runs: a green CI proves a newcomer can follow it."""

from __future__ import annotations

import re

from .conftest import REPO


def test_ci_runs_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Run the tests", 1)[1]
    command = re.search(r"```sh\n(.+?)\n```", section, re.S).group(1).strip()
    ci_lines = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()]
    assert command in ci_lines
