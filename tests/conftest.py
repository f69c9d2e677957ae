"""Shared fixtures: the facts corpus, and a way to run torchdoctor as a user does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FACTS_DIR = Path(__file__).parent / "facts"
REPO = Path(__file__).parent.parent


def load_facts(name: str) -> dict:
    return json.loads((FACTS_DIR / f"{name}.json").read_text())


@pytest.fixture
def facts():
    return load_facts


def run_cli(
    *args: str, timeout: float = 120, env: dict | None = None, input: str | None = None
) -> subprocess.CompletedProcess:
    """``python -m torchdoctor ARGS`` in a real subprocess: real exit codes, real streams."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "torchdoctor", *args],
        capture_output=True,
        text=True,
        input=input,
        timeout=timeout,
        env=full_env,
        cwd=REPO,
    )


def torch_installed() -> bool:
    from importlib.util import find_spec

    return find_spec("torch") is not None


needs_torch = pytest.mark.skipif(not torch_installed(), reason="torch is not installed here")


def _report_schema() -> dict:
    from importlib import resources

    text = resources.files("torchdoctor").joinpath("schema/report.schema.json").read_text()
    return json.loads(text)


# The one published schema every command's JSON validates against (torchdoctor.findings).
REPORT_SCHEMA = _report_schema()
