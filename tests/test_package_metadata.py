"""What a user expects of the package on PyPI: a LICENSE matching the declared license,
classifiers, project URLs, authors, py.typed shipped, and no machine-local path in the README."""

from __future__ import annotations

import re

try:
    import tomllib
except ImportError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

from .conftest import REPO


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_license_file_matches_the_declared_license():
    doc = _project()
    assert doc["project"]["license"] == "MIT"
    assert "LICENSE" in doc["project"]["license-files"]
    assert (REPO / "LICENSE").read_text().startswith("MIT License")


def test_classifiers_urls_and_authors():
    project = _project()["project"]
    assert "Typing :: Typed" in project["classifiers"]
    assert {"Homepage", "Source", "Issues"} <= set(project["urls"])
    assert project["authors"]


def test_py_typed_is_shipped():
    assert (REPO / "torchdoctor" / "py.typed").exists()
    assert "py.typed" in _project()["tool"]["setuptools"]["package-data"]["torchdoctor"]


def test_readme_shows_no_local_machine_path():
    readme = (REPO / "README.md").read_text()
    assert not re.search(r"/work/|/root/|/Users/\w+", readme)
