"""What sets 209-216 of the blind corpora showed (benchmarks/scan_blind209..216): false findings
of the default output, each in the shape of the real code."""

from __future__ import annotations

import textwrap

import pytest

from torchdoctor.scan.engine import ScanOptions, scan_source


def found(src: str) -> list[tuple[str, int, str]]:
    findings, _ = scan_source("metrics.py", textwrap.dedent(src), ScanOptions(confidence="low"))
    return [(f.rule, f.line, f.confidence) for f in findings]


MATRIX0 = """
try:
    import torch
    MPS_AVAILABLE = torch.backends.mps.is_available() if hasattr(torch.backends, "mps") else False
except ImportError:
    MPS_AVAILABLE = False

def sample():
    if MPS_AVAILABLE:
        if hasattr(torch, "mps") and hasattr(torch.mps, "synchronize"):
            torch.mps.synchronize()
"""


def test_a_module_flag_bound_only_to_an_mps_availability_test_matrix0():
    """lukifer23/Matrix0's benchmarks/metrics.py (set 210): `if MPS_AVAILABLE:` around the
    `hasattr(torch, "mps")` branch, the flag bound only to `torch.backends.mps.is_available()`
    (or False)."""
    assert [r for r in found(MATRIX0) if r[0] == "TD008"] == []


def test_a_module_flag_bound_to_something_else_gates_nothing():
    src = MATRIX0.replace(
        'torch.backends.mps.is_available() if hasattr(torch.backends, "mps") else False',
        'hasattr(torch, "mps")',
    )
    assert ("TD008", 10, "high") in found(src)


def test_hasattr_mps_branch_inside_a_try_that_catches_everything_is_low():
    src = """
    import torch

    def sample():
        try:
            if hasattr(torch, "mps"):
                torch.mps.synchronize()
        except Exception:
            pass
    """
    assert ("TD008", 6, "low") in found(src)


ROPE = """
import torch

def rope(pos, dim, theta):
    if is_device_mps(pos.device):
        device = torch.device("cpu")
    else:
        device = pos.device
    scale = torch.linspace(0, (dim - 2) / dim, steps=dim // 2, dtype=torch.float64, device=device)
    return scale
"""


def test_float64_on_a_device_the_function_keeps_off_mps_lightdiffusion_next():
    """Aatricks/LightDiffusion-Next's Flux rope() (set 212): the float64 linspace is built on
    `device`, which the function sets to the CPU when the input is on MPS."""
    assert [r for r in found(ROPE) if r[0] == "TD601"] == []


def test_float64_on_a_device_kept_off_cuda_only_is_still_flagged():
    src = ROPE.replace("is_device_mps(pos.device)", "is_device_cuda(pos.device)")
    assert [r[0] for r in found(src)] == ["TD601"]


@pytest.mark.parametrize(
    "src",
    [
        # the flag also comes from an import
        "try:\n    from config import USE_MPS\nexcept ImportError:\n    USE_MPS = False\n",
        # a function may rebind it
        "USE_MPS = False\n\ndef enable(flag):\n    global USE_MPS\n    USE_MPS = flag\n",
    ],
)
def test_a_flag_bound_elsewhere_too_gates_nothing(src):
    body = 'def sync():\n    if USE_MPS:\n        if hasattr(torch, "mps"):\n            torch.mps.synchronize()\n'
    found_here = found("import torch\n" + src + "\n" + body)
    assert [r[0] for r in found_here] == ["TD008"]


def test_a_parameter_named_like_the_flag_is_the_callers_value():
    src = MATRIX0.replace("def sample():", "def sample(MPS_AVAILABLE):")
    assert ("TD008", 10, "high") in found(src)


NEGATED = """
import torch

def f(device):
    if "mps" not in str(device):
        device = torch.device("cpu")
    return torch.arange(3, dtype=torch.float64, device=device)
"""
TOO_LATE = """
import torch

def f(device):
    y = torch.arange(3, dtype=torch.float64, device=device)
    if device.type == "mps":
        device = torch.device("cpu")
    return y
"""
ANOTHER_FUNCTION = """
import torch

def f(device):
    def helper():
        if device.type == "mps":
            device = torch.device("cpu")
    return torch.arange(3, dtype=torch.float64, device=device)
"""


@pytest.mark.parametrize("src", [NEGATED, TOO_LATE, ANOTHER_FUNCTION])
def test_float64_on_a_device_not_kept_off_mps_before_it_is_built(src):
    assert [r[0] for r in found(src)] == ["TD601"]
