"""TD008: `hasattr(torch, "xpu")` / `hasattr(torch.backends, "mps")` taken for "this backend is
usable". okolenmi/B580-diffusion-training (blind set 154) writes its train step for Intel Arc
and CUDA, and on the CUDA machine it also supports calls `torch.xpu.current_stream()`, which
raises "Torch not compiled with XPU enabled": the labeller's four crashes. What raises and what
does not is checked here on the installed torch when there is one."""

from __future__ import annotations

import textwrap

import pytest

from torchdoctor.scan.engine import ScanOptions, scan_source

B580_TRAIN_STEP = """
import torch


class TrainStep:
    def __init__(self):
        self.stream = torch.cuda.Stream() if torch.cuda.is_available() else None

    def prefetch(self, batch, device):
        with torch.xpu.stream(self.stream) if hasattr(torch, 'xpu') else torch.cuda.stream(self.stream):
            batch = batch.to(device, non_blocking=True)
        if hasattr(torch, 'xpu'):
            torch.xpu.current_stream().wait_stream(self.stream)
        else:
            torch.cuda.current_stream().wait_stream(self.stream)
        return batch
"""

GUARDED = """
import torch


def pick():
    if hasattr(torch, "xpu") and torch.xpu.is_available():
        return "xpu"
    if hasattr(torch, "xpu"):
        torch.xpu.empty_cache()
    if hasattr(torch, "xpu"):
        try:
            if torch.xpu.is_available():
                return "xpu"
        except Exception:
            pass
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"
"""


def td008(src: str) -> list[tuple[int, str]]:
    findings, _ = scan_source("step.py", textwrap.dedent(src), ScanOptions(confidence="low"))
    return [(f.line, f.confidence) for f in findings if f.rule == "TD008"]


def test_xpu_stream_on_a_cuda_machine_b580_diffusion_training():
    # line 10: the stream context raises on the CUDA machine the code also targets (it takes
    # CUDA's current device for its own: seen on an H100) and does nothing on the CPU;
    # line 12: current_stream() raises on every machine without XPU
    assert td008(B580_TRAIN_STEP) == [(10, "high"), (12, "high")]


def test_a_real_availability_test_or_a_harmless_call_is_quiet():
    assert td008(GUARDED) == []


def test_mps_cache_behind_hasattr_benchmark_scripts():
    """`if hasattr(torch.backends, "mps"): torch.mps.empty_cache()` in a benchmark's cleanup:
    on Linux and Windows torch.mps.empty_cache() raises."""
    src = "import torch\n\nif hasattr(torch.backends, 'mps'):\n    torch.mps.empty_cache()\n"
    assert td008(src) == [(3, "high")]
    assert td008(src.replace("'mps')", "'mps') and torch.backends.mps.is_available()")) == []


def test_what_the_rule_says_raises_does_raise_on_this_torch():
    """The rule's split of torch.xpu / torch.mps into harmless calls and calls that raise,
    checked against the installed torch (neither backend; a GPU changes what the stream does)."""
    torch = pytest.importorskip("torch")
    if torch.xpu.is_available() or torch.backends.mps.is_available():
        pytest.skip("this machine has XPU or MPS: the calls would not raise")
    assert hasattr(torch, "xpu") and hasattr(torch.backends, "mps")
    from torchdoctor.scan.checks.backend_test import HARMLESS

    for fn in ("synchronize", "current_stream", "get_device_name"):
        with pytest.raises((AssertionError, RuntimeError)):
            getattr(torch.xpu, fn)()
    for fn in ("empty_cache", "synchronize"):
        with pytest.raises(RuntimeError):
            getattr(torch.mps, fn)()
    for fn in ("empty_cache", "device_count", "is_available", "memory_allocated"):
        assert fn in HARMLESS["xpu"]
        getattr(torch.xpu, fn)()
    if torch.cuda.is_available():  # StreamContext takes CUDA's device and asks torch.xpu
        with pytest.raises(AssertionError, match="Torch not compiled with XPU enabled"):
            torch.xpu.stream(object()).__enter__()
    else:
        with torch.xpu.stream(object()):  # a no-op on the CPU
            pass


# ainem-m/segmentation_w_mps (blind set 177): a Mac-only child process whose MPS gate raises
# unless MPS is available, then times its work with `hasattr(torch, "mps")` branches. Its
# labeller: reached only where MPS is (four lookalikes the scan had flagged).
MPS_CHILD = """
import torch


def run_mps_gate(torch):
    if not torch.backends.mps.is_available():
        raise RuntimeError("torch.backends.mps.is_available() is false")
    x = torch.randn(2, device="mps")
    if hasattr(torch, "mps") and hasattr(torch.mps, "synchronize"):
        torch.mps.synchronize()
    return {"ok": True}


def main():
    report = {}
    try:
        report["gate"] = run_mps_gate(torch)
        if hasattr(torch, "mps"):
            torch.mps.synchronize()
    finally:
        print(report)
"""


def test_mps_branches_after_the_gate_raised_unless_mps_segmentation_w_mps():
    assert td008(MPS_CHILD) == []


def test_a_branch_before_the_gate_or_where_mps_is_known_absent_still_raises():
    before = MPS_CHILD.replace(
        '        report["gate"] = run_mps_gate(torch)\n        if hasattr(torch, "mps"):\n'
        "            torch.mps.synchronize()\n",
        '        if hasattr(torch, "mps"):\n            torch.mps.synchronize()\n'
        '        report["gate"] = run_mps_gate(torch)\n',
    )
    assert td008(before) == [(17, "high")]
    absent = """
    import torch

    if not torch.backends.mps.is_available():
        if hasattr(torch, "mps"):
            torch.mps.empty_cache()
    """
    assert td008(absent) == [(5, "high")]
    either = "import torch\n\nif torch.backends.mps.is_available() or True:\n"
    assert td008(either + "    if hasattr(torch, 'mps'):\n        torch.mps.empty_cache()\n") == [
        (4, "high")
    ]


def test_a_gate_that_may_not_have_run_does_not_count_and_a_lambda_does_not_crash():
    """Found in review: a gate called in a `try` whose error is swallowed, under an `if`, or
    only inside a nested function may not have run; a lambda or an IfExp body is no list of
    statements (the walk raised TypeError)."""
    gate = (
        "import torch\n\n\ndef gate():\n    if not torch.backends.mps.is_available():\n"
        "        raise RuntimeError('no MPS')\n\n\n"
    )
    branch = "    if hasattr(torch, 'mps'):\n        torch.mps.synchronize()\n"
    for before in (
        "    try:\n        gate()\n    except RuntimeError:\n        pass\n",
        "    if args.mac:\n        gate()\n",
        "    def later():\n        gate()\n",
    ):
        assert len(td008(gate + "def main(args):\n" + before + branch)) == 1, before
    lam = gate + "sync = lambda: torch.mps.synchronize() if hasattr(torch, 'mps') else None\n"
    assert td008(lam) == [(9, "high")]


def test_a_stream_of_none_does_nothing_anywhere():
    src = "import torch\nwith torch.xpu.stream(None) if hasattr(torch, 'xpu') else torch.cuda.stream(None):\n    pass\n"
    assert td008(src) == []
