"""ruff must see every Python file git tracks.

ruff (like many tools) silently skips folders named ``dist`` or ``build``; the cluster package once
lived in ``torchdoctor/dist/`` and went unlinted for that reason.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO


def _ruff() -> list[str]:
    exe = shutil.which("ruff") or shutil.which("ruff", path=str(REPO / ".venv" / "bin"))
    if exe:
        return [exe]
    return [sys.executable, "-m", "ruff"]


def test_ruff_sees_every_tracked_python_file():
    git = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=False
    )
    if git.returncode != 0:
        pytest.skip(f"not a git checkout: {git.stderr.strip()}")
    tracked = {line for line in git.stdout.splitlines() if line}
    seen = subprocess.run(
        [*_ruff(), "check", "--show-files", "."], cwd=REPO, capture_output=True, text=True
    )
    assert seen.returncode == 0, seen.stderr
    ruff_files = {
        str(p.relative_to(REPO)) if p.is_absolute() else str(p)
        for p in map(Path, seen.stdout.split())
        if str(p).endswith(".py")
    }
    missing = sorted(tracked - ruff_files)
    assert not missing, f"ruff does not lint: {missing}"
