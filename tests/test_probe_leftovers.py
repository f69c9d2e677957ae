"""Nothing torchdoctor starts outlives it: a helper process spawned during the probe's
`import torch` (by a plugin, a sitecustomize, a .pth hook) is gone when torchdoctor exits,
whether it ends normally, at its deadline or on Ctrl-C."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .conftest import REPO, needs_torch

pytestmark = [needs_torch, pytest.mark.slow]

# A sitecustomize (on PYTHONPATH) whose import hook starts `sleep 300` when torch is imported,
# as a plugin that launches a server would; torchdoctor's own process never imports torch.
HOOK = textwrap.dedent(
    """
    import os, subprocess, sys, time

    class _SpawnOnTorchImport:
        def find_spec(self, name, path=None, target=None):
            if name == "torch":
                sys.meta_path.remove(self)
                child = subprocess.Popen(["sleep", "300"])
                with open(os.environ["TD_TEST_PIDFILE"], "w") as fh:
                    fh.write(str(child.pid))
                if os.environ.get("TD_TEST_HANG_IMPORT"):
                    time.sleep(300)
            return None

    sys.meta_path.insert(0, _SpawnOnTorchImport())
    """
)


def running(pid: int) -> bool:
    """Alive and not a zombie (a zombie waiting for an init that does not reap is gone too)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.fixture
def hooked(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(HOOK)
    pidfile = tmp_path / "spawned.pid"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])),
        "TD_TEST_PIDFILE": str(pidfile),
        "NO_COLOR": "1",
    }
    spawned: list[int] = []
    yield env, pidfile, spawned
    for pid in spawned:  # never leave a sleep behind, even when an assertion failed
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def start(env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "torchdoctor", "check", "--no-smoke", "--json", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )


def spawned_pid(pidfile: Path, spawned: list[int], within_s: float = 60) -> int:
    end = time.monotonic() + within_s
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < end, "the import hook never ran"
        time.sleep(0.05)
    spawned.append(int(pidfile.read_text()))
    return spawned[-1]


def test_a_helper_spawned_during_import_torch_is_gone_after_a_normal_run(hooked):
    env, pidfile, spawned = hooked
    proc = start(env)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode in (0, 1), err
    pid = spawned_pid(pidfile, spawned, 0)
    assert not running(pid), "the sleep started during `import torch` outlived torchdoctor"


def test_a_helper_spawned_during_a_hung_import_is_gone_after_the_deadline(hooked):
    env, pidfile, spawned = hooked
    proc = start({**env, "TD_TEST_HANG_IMPORT": "1"}, "--timeout", "3")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "import" in out  # the report names the stage it was stuck in
    assert not running(spawned_pid(pidfile, spawned, 0))


def test_a_helper_spawned_during_import_is_gone_after_ctrl_c(hooked):
    env, pidfile, spawned = hooked
    proc = start({**env, "TD_TEST_HANG_IMPORT": "1"}, "--timeout", "120")
    pid = spawned_pid(pidfile, spawned)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    time.sleep(0.2)
    assert not running(pid), "the sleep started during `import torch` outlived Ctrl-C"
