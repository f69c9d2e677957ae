"""Shared fixtures: the facts corpus, and a way to run torchdoctor as a user does."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# The suite runs as a terminal's foreground job does, however it was started. A runner started as
# a background job of a script (`.ci/run &`, no job control) ignores SIGINT, and `trap '' TERM`
# ignores SIGTERM; torchdoctor keeps an ignore it was started with (interrupts.IGNORED_AT_START),
# so every child the tests stop with that signal would then run on (the CI flake of the 50 ms
# probe case: exit 1, nothing said). Set here, before torchdoctor loads, each child gets the
# default: exec resets a caught signal (SIGINT's Python handler) and SIG_DFL stays SIG_DFL.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

FACTS_DIR = Path(__file__).parent / "facts"
REPO = Path(__file__).parent.parent


def load_facts(name: str) -> dict:
    return json.loads((FACTS_DIR / f"{name}.json").read_text())


@pytest.fixture
def facts():
    return load_facts


@pytest.fixture
def uncalibrated(monkeypatch):
    """The rules' own confidence, without the blind calibration on top (scan/calibration.py,
    tested in test_scan_calibration.py): what tests of one rule's reasoning look at."""
    from torchdoctor.scan import calibration

    monkeypatch.setattr(calibration, "MEASURED", {})
    monkeypatch.setattr(calibration, "RECENT", {})


def run_cli(
    *args: str,
    timeout: float = 120,
    env: dict | None = None,
    input: str | None = None,
    cwd: Path = REPO,
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
        cwd=cwd,
    )


def judge_facts(tmp_path: Path, facts: dict, *args: str) -> list[dict]:
    """`check --facts` on ``facts`` (a parsed facts document) written to a file: the findings
    of its JSON report."""
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts))
    return json.loads(run_cli("check", "--facts", str(path), "--json", *args).stdout)["findings"]


def torch_installed() -> bool:
    from importlib.util import find_spec

    return find_spec("torch") is not None


needs_torch = pytest.mark.skipif(not torch_installed(), reason="torch is not installed here")

# Hides every GPU from CUDA (NVML still sees them): a CUDA torch then sees no device, as on a
# machine without one, so a test of that case holds on a GPU machine too.
NO_GPU = {"CUDA_VISIBLE_DEVICES": ""}


def plain_load(path: Path) -> subprocess.CompletedProcess:
    """`torch.load(path)` with no map_location, in a child process that sees no GPU."""
    return subprocess.run(
        [sys.executable, "-c", f"import torch; torch.load({str(path)!r})"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **NO_GPU},
    )


@functools.cache
def nvml_gpu_count() -> int:
    from torchdoctor.probes import nvml

    info = nvml.gather()
    return int(info.get("device_count") or 0) if info.get("status") == "ok" else 0


# For what only a machine without a GPU shows (a GPU machine is the subject of tests/test_gpu.py)
on_a_cpu_machine = pytest.mark.skipif(
    nvml_gpu_count() > 0, reason="NVML sees a GPU here: this test is about a machine without one"
)


@pytest.fixture(scope="session")
def ckpts(tmp_path_factory) -> Path:
    """The checkpoint files of tests/ckpt_factory.py (CPU- and CUDA-tagged, legacy, …)."""
    if not torch_installed():
        pytest.skip("torch is not installed here")
    out = tmp_path_factory.mktemp("ckpt")
    # GPU hidden: DataParallel would move its module to cuda:0 (tests/facts/cuda_checkpoints holds
    # files saved from a real GPU)
    subprocess.run(
        [sys.executable, str(REPO / "tests" / "ckpt_factory.py"), str(out)],
        check=True,
        timeout=120,
        env={**os.environ, **NO_GPU},
    )
    return out


def _report_schema() -> dict:
    from importlib import resources

    text = resources.files("torchdoctor").joinpath("schema/report.schema.json").read_text()
    return json.loads(text)


# The one published schema every command's JSON validates against (torchdoctor.report.findings).
REPORT_SCHEMA = _report_schema()


@functools.cache
def private_tmpfs_unavailable() -> str | None:
    """Why a tmpfs cannot be mounted in a private mount namespace here (None: it can), for tests
    that need a real filesystem of their own: a full disk, a small /dev/shm."""
    if os.name != "posix" or os.geteuid() != 0:
        return "needs root to mount a tmpfs in a new mount namespace"
    if not shutil.which("unshare"):
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /dev/shm"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if probe.returncode != 0:
        return f"this machine refuses a private mount namespace: {probe.stderr.strip()[:200]}"
    return None


@pytest.fixture(autouse=True, scope="session")
def _scan_cache_outside_the_checkout(tmp_path_factory):
    """`torchdoctor scan` caches in the project it runs in (this checkout, for run_cli): the
    tests keep theirs in a temporary folder instead."""
    old = os.environ.get("TORCHDOCTOR_CACHE_DIR")
    os.environ["TORCHDOCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("scan-cache"))
    yield
    if old is None:
        os.environ.pop("TORCHDOCTOR_CACHE_DIR", None)
    else:
        os.environ["TORCHDOCTOR_CACHE_DIR"] = old
