"""The probe runner against stand-in children that hang, crash, raise or print garbage,
and the real torch probe against the CPU torch installed here."""

from __future__ import annotations

import platform
import sys
import textwrap
import time
from pathlib import Path

import pytest

from torchdoctor.check.gather import torch_facts_from_run
from torchdoctor.probes.child import torch_probe
from torchdoctor.probes.runner import child_argv, run_probe

from .conftest import needs_torch

PRELUDE = textwrap.dedent(
    """
    import json, os, signal, sys, time
    def emit(**kw):
        print(json.dumps(kw), flush=True)
    emit(event="begin", stage="platform")
    emit(event="end", stage="platform", data={"system": "Linux"})
    """
)


def stand_in(body: str, timeout: float = 5.0, **kw):
    return run_probe([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], timeout, **kw)


def test_hanging_child_is_killed_at_the_deadline_and_keeps_earlier_facts():
    t0 = time.monotonic()
    run = stand_in('emit(event="begin", stage="cuda.init")\ntime.sleep(60)', timeout=1.5)
    assert time.monotonic() - t0 < 10
    assert run.status == "timeout"
    assert run.unfinished_stage == "cuda.init"
    assert run.stages["platform"] == {"system": "Linux"}
    assert "cuda.init" in run.message


def test_grandchildren_are_killed_with_the_group():
    body = """
    import subprocess
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    emit(event="begin", stage="grandchild", pid=p.pid)
    print(json.dumps({"event": "end", "stage": "grandchild", "data": {"pid": p.pid}}), flush=True)
    emit(event="begin", stage="hang")
    time.sleep(60)
    """
    run = stand_in(body, timeout=1.5)
    assert run.status == "timeout"
    pid = run.stages["grandchild"]["pid"]
    time.sleep(0.2)
    # Gone, or a zombie waiting for an init that does not reap: either way, not running.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z", "X")


def test_segfault_is_a_crash_with_the_stage_named():
    run = stand_in('emit(event="begin", stage="cuda")\nos.kill(os.getpid(), signal.SIGSEGV)')
    assert run.status == "crashed"
    assert run.signal == "SIGSEGV"
    assert run.unfinished_stage == "cuda"
    assert run.stages["platform"]["system"] == "Linux"


def test_exception_exit_is_failed_with_stderr_kept():
    run = stand_in('emit(event="begin", stage="build")\nraise RuntimeError("kaboom")')
    assert run.status == "failed"
    assert run.returncode == 1
    assert "kaboom" in run.stderr_tail


def test_garbage_lines_are_counted_not_fatal():
    body = 'print("hello, I am not JSON", flush=True)\nprint("[1,2]")\nemit(event="done")'
    run = stand_in(body)
    assert run.status == "ok"
    assert run.garbage_lines == 2
    assert run.stages["platform"]["system"] == "Linux"


def test_phase_gets_its_own_deadline():
    # 1 s for the first phase would kill it; the smoke phase restarts the clock with 3 s.
    body = """
    time.sleep(0.6)
    emit(event="phase", phase="smoke")
    emit(event="begin", stage="smoke.cpu")
    time.sleep(0.8)
    emit(event="end", stage="smoke.cpu", data={})
    emit(event="done")
    """
    run = stand_in(body, timeout=1.0, phase_timeouts={"smoke": 3.0})
    assert run.status == "ok", run.message
    assert "smoke.cpu" in run.stages


def test_missing_interpreter_is_not_started():
    run = run_probe(["/nonexistent/python", "-c", "pass"], 5)
    assert run.status == "not_started"
    assert "could not start" in run.message


def test_missing_torch_is_reported_as_missing(tmp_path):
    # An isolated interpreter (-I -S: no site-packages) cannot see torch.
    python, *rest = child_argv(sys.executable, "torch_probe")
    argv = [python, "-I", "-S", *rest]
    run = run_probe(argv, 30)
    assert run.status == "ok"
    torch = torch_facts_from_run(run)
    assert torch["status"] == "missing"
    assert run.stages["platform"]["python_bits"] == 64


@needs_torch
def test_real_torch_probe_on_cpu_torch():
    run = run_probe(child_argv(sys.executable, "torch_probe"), 60)
    assert run.status == "ok", (run.message, run.stderr_tail)
    torch = torch_facts_from_run(run)
    import torch as real_torch

    assert torch["status"] == "ok"
    assert torch["version"] == real_torch.__version__
    assert torch["build"]["variant"] == ("cuda" if real_torch.version.cuda else "cpu")
    assert torch["build"]["num_threads"] == real_torch.get_num_threads()
    # PyPI's CUDA wheels: 2.11.0 in their metadata, 2.11.0+cu130 in torch.__version__ (an H100)
    installed = run.stages["packages"]["distributions"]["torch"]["version"]
    assert installed in (real_torch.__version__, real_torch.__version__.split("+")[0])


def test_probe_reads_distro_glibc_cpu_flags_and_conda_meta(tmp_path):
    meta = tmp_path / "conda-meta"
    meta.mkdir()
    (meta / "pytorch-2.5.1-py3.11_cuda12.4_cudnn9.1.0_0.json").write_text("{}")
    (meta / "zlib-1.3.1-h4ab18f5_1.json").write_text("{}")
    assert torch_probe._conda_packages(str(tmp_path)) == {"pytorch": "2.5.1"}
    facts = torch_probe.linux_facts()
    assert facts["glibc"] == platform.libc_ver()[1]
    assert isinstance(facts["cpu"]["isa"], list) and facts["cpu"]["model"]


def test_probe_records_a_companions_real_import_error(tmp_path, monkeypatch):
    """A torchvision whose C++ ops do not load: the probe keeps its error, not just its version."""
    info = tmp_path / "torchvision-0.28.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\nVersion: 0.28.0\n")
    pkg = tmp_path / "torchvision"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "raise RuntimeError('operator torchvision::nms does not exist')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torchvision", raising=False)
    record = torch_probe.companion_facts()["torchvision"]
    assert record["imported"] is False
    assert record["error"] == {
        "type": "RuntimeError",
        "message": "operator torchvision::nms does not exist",
    }


def _fake_torchvision(root, version: str, cuda_line: str) -> None:
    info = root / f"torchvision-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: torchvision\nVersion: {version}\n"
    )
    pkg = root / "torchvision"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"__version__ = '{version}'\nfrom . import version\n")
    (pkg / "version.py").write_text(cuda_line + "\n")


@pytest.mark.parametrize(
    ("cuda_line", "recorded"),
    [
        ("cuda = 13000", "13.0"),  # torchvision 0.26.0+cu130 on a real H200, 2026-11-26
        ("cuda = 12080", "12.8"),
        ("cuda = 9020", "9.2"),
        ("cuda = -1", None),
        ("cuda = None", None),
        ("cuda = '11.8'", "11.8"),
    ],
)
def test_torchvision_version_cuda_13000_is_CUDA_13_0_not_the_CPU(
    tmp_path, monkeypatch, cuda_line, recorded
):
    """On a real H200 (torch 2.11.0+cu130, torchvision 0.26.0+cu130) `check` said "torchvision
    0.26.0 is built for the CPU": torchvision's version.cuda is the int 13000, which the record
    (a string field) dropped as absent. The probe now writes it the way torch does."""
    _fake_torchvision(tmp_path, "0.26.0", cuda_line)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torchvision", raising=False)
    monkeypatch.delitem(sys.modules, "torchvision.version", raising=False)
    record = torch_probe.companion_facts()["torchvision"]
    assert record["imported"] is True
    assert record["cuda_known"] is True
    assert record["cuda"] == recorded
