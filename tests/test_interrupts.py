"""Ctrl-C at any moment is exit 130 and one line; a deleted working directory is no finding."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from .conftest import FACTS_DIR, REPO, needs_torch

# The interpreter's own start-up (site, the console script's `import re`) runs before any line of
# torchdoctor and is CPython's to handle; the clock starts when torchdoctor's entry is reached.
LAUNCH = (
    "import os, sys\n"
    "from torchdoctor.__main__ import entry\n"
    "os.write(2, b'@')\n"
    "entry()\n"
)  # fmt: skip


def interrupted_after(delay_s: float, *args: str) -> tuple[int, str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", LAUNCH, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert proc.stderr.read(1) == b"@"  # torchdoctor's entry is running
    time.sleep(delay_s)
    proc.send_signal(signal.SIGINT)
    err = proc.stderr.read().decode()
    return proc.wait(timeout=60), err


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("delay_ms", [0, 5, 15, 30, 50, 150, 400])
def test_ctrl_c_in_the_first_50_ms_and_later_is_exit_130_in_one_line(delay_ms):
    # --facts: a run that is still busy long after the last delay is not needed; if the command
    # already finished, its own exit code is fine too (the point is: never a traceback).
    rc, err = interrupted_after(
        delay_ms / 1000, "check", "--facts", str(FACTS_DIR / "h100_healthy.json"), "-v"
    )
    assert "Traceback" not in err
    if rc == 130:
        assert err == "Interrupted.\n"
    else:
        assert rc == 0 and err == "", (rc, err)


@needs_torch
@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("delay_ms", [50, 1000])
def test_ctrl_c_while_the_probe_runs_is_exit_130_in_one_line(delay_ms, tmp_path):
    # An interpreter that takes 60 s to start: the probe is surely running when Ctrl-C comes (on
    # a quiet machine a whole `check --no-smoke` can end within the second; with 5 s, a CI run
    # whose test process was starved that long once saw the check end first: exit 0, no line).
    # The interrupted probe's process group is killed, so the sleep costs nothing.
    slow = tmp_path / "python"
    slow.write_text(f'#!/bin/sh\nsleep 60\nexec "{sys.executable}" "$@"\n')
    slow.chmod(0o755)
    rc, err = interrupted_after(delay_ms / 1000, "check", "--no-smoke", "--python", str(slow))
    assert (rc, err) == (130, "Interrupted.\n")


@needs_torch
@pytest.mark.skipif(os.name != "posix", reason="a directory in use cannot be removed on Windows")
def test_deleted_working_directory_does_not_become_torch_cannot_be_imported(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    code = (
        "import os, sys\n"
        f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
        "from torchdoctor.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, "check", "--json", "--no-smoke"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["facts"]["torch"]["status"] == "ok", doc["facts"]["probe"]
