"""TD601 for a NumPy float64 array turned into a tensor and moved to the device with no dtype:
kijai/ComfyUI-PyramidFlowWrapper#29, "Cannot convert a MPS Tensor to float64 dtype" at the flow
scheduler's `torch.from_numpy(np.linspace(…)).to(device=device)` (labelled in blind sets 126 and
146, missed by every rule then). NumPy's float64 survives from_numpy, torch.tensor and
torch.as_tensor: checked here on the installed torch."""

from __future__ import annotations

import pytest

from .scan_tree import scan_tree

SCHEDULER = """\
    import numpy as np
    import torch


    def pick():
        return "mps" if torch.backends.mps.is_available() else "cpu"


    class FlowScheduler:
        def set_timesteps(self, n, device=None):
            sigmas = np.linspace(1.0, 0.0, n)
            self.sigmas = torch.from_numpy(sigmas).to(device=device)
            self.timesteps = torch.tensor(np.linspace(0, 1000, n)).to(device)
            self.a = torch.from_numpy(np.linspace(0, 1, n)).to(device, torch.float32)
            self.b = torch.from_numpy(np.linspace(0, 1, n, dtype=np.float32)).to(device)
            self.c = torch.from_numpy(np.arange(n)).to(device)
            self.d = torch.from_numpy(np.linspace(0, 1, n)).to("cpu")
            self.e = torch.from_numpy(np.linspace(0, 1, n)).float().to(device)
"""


def _td601(tmp_path, files):
    return [
        (line, conf) for path, line, rule, conf in scan_tree(tmp_path, files) if rule == "TD601"
    ]


def test_cannot_convert_a_mps_tensor_to_float64_pyramidflow_sigmas(tmp_path):
    found = _td601(tmp_path, {"scheduler.py": SCHEDULER})
    assert [line for line, _ in found] == [12, 13]  # the two moves with no float32 on the way


def test_in_a_project_that_never_picks_mps_it_stays_low(tmp_path):
    cuda_only = SCHEDULER.replace('"mps" if torch.backends.mps.is_available() else ', "")
    assert {conf for _, conf in _td601(tmp_path, {"scheduler.py": cuda_only})} == {"low"}


def test_numpy_float64_stays_float64_as_a_tensor():
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    for make in (torch.from_numpy, torch.tensor, torch.as_tensor):
        assert make(np.linspace(0, 1, 3)).dtype == torch.float64
    assert torch.from_numpy(np.arange(3)).dtype == torch.int64


def test_a_cast_a_full_of_ints_or_names_that_refer_to_each_other(tmp_path):
    """Found in review: `.to(torch.float32)` (the fix itself), `.to(other_tensor)` and
    `np.full((3,), 1)` (int64) are no float64 move; `a = b; b = a` ended in RecursionError."""
    src = """\
        import numpy as np
        import torch
        device = "mps" if torch.backends.mps.is_available() else "cpu"


        def f(n, other):
            x = torch.from_numpy(np.linspace(0, 1, n)).to(torch.float32)
            y = torch.from_numpy(np.linspace(0, 1, n)).to(other)
            z = torch.from_numpy(np.full((3,), 1)).to(device)
            a = np.linspace(0, 1, n)
            b = a
            a = b
            return torch.from_numpy(a).to(device)
    """
    assert _td601(tmp_path, {"m.py": src}) == []
