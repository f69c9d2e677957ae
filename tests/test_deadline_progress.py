"""The whole run has one deadline (30 s by default), and on a terminal torchdoctor says what it is
waiting for while a stage hangs, instead of a silent screen until the deadline."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from torchdoctor.check import progress

from .conftest import REPO


def hanging_interpreter(tmp_path: Path, stage: str = "cuda.init") -> Path:
    """A stand-in for --python: reports the platform, begins ``stage`` and never finishes it."""
    script = tmp_path / "python"
    script.write_text(
        "#!/bin/sh\n"
        'echo \'{"event": "begin", "stage": "platform"}\'\n'
        'echo \'{"event": "end", "stage": "platform", "data": {}}\'\n'
        f'echo \'{{"event": "begin", "stage": "{stage}"}}\'\n'
        "exec sleep 300\n"
    )
    script.chmod(0o755)
    return script


def run_on_terminal(argv: list[str], timeout: float) -> tuple[int, str, str, float]:
    """Run with stderr on a pseudo-terminal (stdout a pipe); (rc, stdout, terminal text, s)."""
    master, slave = pty.openpty()
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=slave,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1"},
    )
    os.close(slave)
    chunks: list[bytes] = []

    def read_terminal() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: every writer closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read_terminal, daemon=True)
    reader.start()
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
    took = time.monotonic() - t0
    reader.join(5)
    os.close(master)
    return proc.returncode, out.decode(), b"".join(chunks).decode(errors="replace"), took


@pytest.mark.slow
def test_a_hung_cuda_init_is_named_on_the_terminal_and_ends_within_30_s(tmp_path):
    """Reported: a CUDA initialisation hang showed nothing for the 60 s default deadline."""
    python = hanging_interpreter(tmp_path)
    argv = [sys.executable, "-m", "torchdoctor", "check", "--python", str(python), "--json"]
    rc, out, terminal, took = run_on_terminal(argv, timeout=120)
    assert rc == 1, terminal
    assert took < 30 + 15, f"the default whole-run deadline is not 30 s: {took:.0f} s"
    assert "waiting for CUDA initialisation… 3 s" in terminal
    assert "waiting for CUDA initialisation… 20 s" in terminal
    assert terminal.endswith("\r\x1b[K")  # the line is erased before the report
    assert "stuck in: cuda.init" in out


def test_off_a_terminal_nothing_is_written_while_waiting(tmp_path):
    python = hanging_interpreter(tmp_path)
    r = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", "--python", str(python), "--timeout", "5"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert r.returncode == 1
    assert "waiting for" not in r.stderr and "\x1b" not in r.stderr


def test_stage_names_in_words():
    assert progress.describe("cuda.init") == "CUDA initialisation"
    assert progress.describe("import") == "import torch"
    assert progress.describe("smoke.cuda:1") == "the smoke test on cuda:1"
    assert progress.describe("smoke.peer.cuda:0>cuda:1") == "the copy test cuda:0 → cuda:1"
    assert progress.describe(None) == "the torch probe"
