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


def test_readme_is_a_first_screen_not_a_manual():
    # The README gets someone from zero to a diagnosis; the rest lives in docs/.
    assert len((REPO / "README.md").read_text().splitlines()) <= 200


def test_readme_and_docs_links_point_at_files_that_exist():
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" in target:
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)} -> {target}")
    assert not broken, broken
