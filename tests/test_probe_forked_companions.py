"""The companion imports run in a forked child beside the CUDA stages (probes/child/forked.py).

Measured on a real H200 (2026-11-26): importing torchvision, torchaudio and triton took 4.3 s of
an 11.7 s probe. Here the real torch probe runs over this machine's torch with stand-in
companions on PYTHONPATH that print at import, crash at import or never finish importing.
"""

from __future__ import annotations

import os
import sys
import time

import psutil
import pytest

from torchdoctor.check.gather import torch_facts_from_run
from torchdoctor.probes.runner import child_argv, run_probe

from .conftest import needs_torch

pytestmark = [
    needs_torch,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork is used on Linux only"),
]


def _companion(root, name: str, body: str) -> None:
    info = root / f"{name}-9.9.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 9.9.0\n")
    (root / f"{name}.py").write_text(f"__version__ = '9.9.0'\n{body}\n")


def _probe(tmp_path, timeout: float = 60):
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    return run_probe(
        child_argv(sys.executable, "torch_probe", "--smoke", "quick"), timeout, env=env
    )


def test_a_companion_that_prints_at_import_does_not_corrupt_the_event_stream(tmp_path):
    _companion(tmp_path, "torchvision", "print('hello from torchvision'); print('{not json')")
    run = _probe(tmp_path)
    assert run.status == "ok", (run.message, run.stderr_tail)
    assert run.garbage_lines == 0
    record = torch_facts_from_run(run)["companions"]["torchvision"]
    assert record == {"imported": True, "version": "9.9.0"}
    assert "smoke.cpu" in run.stages and "companions" in run.stage_durations


def test_torchvision_segfault_at_import_is_the_finding_and_the_rest_of_the_probe_survives(
    tmp_path,
):
    """'Segmentation fault (core dumped)' on `import torchvision` (a build for another torch)
    used to take the whole probe down at the companions stage; now only that stage fails."""
    _companion(tmp_path, "torchvision", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
    run = _probe(tmp_path)
    assert run.status == "ok", (run.message, run.stderr_tail)
    assert "smoke.cpu" in run.stages
    err = run.errors["companions"]
    assert err["type"] == "ChildDied" and "signal 11" in err["message"]


def test_an_import_that_never_finishes_is_killed_with_the_probe(tmp_path):
    marker = f"td-hang-{os.getpid()}-{time.time_ns()}"
    _companion(tmp_path, "torchvision", f"import time\nMARK = {marker!r}\ntime.sleep(3600)")
    t0 = time.monotonic()
    run = _probe(tmp_path, timeout=15)
    assert time.monotonic() - t0 < 40
    assert run.status != "ok" and run.unfinished_stage == "companions"
    time.sleep(0.5)
    left = [
        p.pid
        for p in psutil.process_iter(["cmdline", "environ"])
        if str(tmp_path) in " ".join((p.info.get("environ") or {}).values())
    ]
    assert left == []
