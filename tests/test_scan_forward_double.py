"""TD601 for a float64 cast inside a module's forward: the tensors there are on the module's
device. mace's MACELES.forward (`node_e0.clone().double()`) raises "Cannot convert a MPS
Tensor to float64 dtype" when a user picks `--device mps`, which mace offers (ACEsuit/mace#1271;
the seventy-eighth blind corpus). In a project that never picks MPS the finding stays low."""

from __future__ import annotations

from torchdoctor.scan.engine import ScanOptions, scan_paths

MODEL = """import torch
from torch import nn


class Energy(nn.Module):
    def forward(self, node_e0, inter):
        total = node_e0.clone().double() + inter.to(torch.float64)
        return total

    def summary(self, x):
        return x.double()


class NotAModule:
    def forward(self, x):
        return x.double()
"""
PICKS_MPS = """import torch

def init_device(name):
    if name == "mps" and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
"""


def _td601(tmp_path, *files: tuple[str, str]) -> list[tuple[int, str]]:
    for name, text in files:
        (tmp_path / name).write_text(text)
    # the rule's own reasoning: --portable (a Mac-first project) keeps it from the measured
    # class (TD601 in files without a CPU fallback: 2 of 6 repositories real since set 247)
    res = scan_paths([str(tmp_path)], ScanOptions(confidence="low", portable=True), jobs=1)
    return sorted((f.line, f.confidence) for f in res.findings if f.rule == "TD601")


def test_cannot_convert_a_mps_tensor_to_float64_in_a_forward_mace(tmp_path):
    # both casts of forward and the one of the other method; not a plain class's forward
    found = _td601(tmp_path, ("model.py", MODEL), ("tools.py", PICKS_MPS))
    assert found == [(7, "high"), (7, "high"), (11, "high")]


def test_forward_double_in_a_project_that_never_picks_mps_is_low(tmp_path):
    found = _td601(tmp_path, ("model.py", MODEL))
    assert [c for _, c in found] == ["low", "low", "low"]


def test_a_cast_straight_to_numpy_is_a_host_tensor_pyg_to_slic(tmp_path):
    """PyG's ToSLIC transform: `slic(img.to(torch.double).numpy())` in a forward; `.numpy()`
    says the tensor is on the CPU already."""
    host = MODEL.replace(
        "total = node_e0.clone().double() + inter.to(torch.float64)",
        "total = slic(node_e0.to(torch.double).numpy())",
    )
    assert _td601(tmp_path, ("model.py", host), ("tools.py", PICKS_MPS)) == [
        (11, "high")
    ]  # summary


# openvpi/SingingVocoders' NSF SineGen (blind set 130): `_f02sine`, called from forward, sums
# the phase in float64 on the f0 tensor's device; the Lightning trainer's accelerator is
# "auto", which is MPS on Apple silicon.
SINEGEN = """import torch
from torch import nn


class SineGen(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.table = torch.arange(dim).double().float()

    def _f02sine(self, rad_values):
        return torch.cumsum(rad_values.double(), 1)

    @staticmethod
    def pad(x):
        return x.double()

    @classmethod
    def from_numpy(cls, x):
        return torch.from_numpy(x).double()

    def forward(self, f0):
        return self._f02sine(f0 / 24000)


class Quant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.double().round()
"""


def test_cannot_convert_a_mps_tensor_to_float64_in_a_method_forward_calls_sinegen(tmp_path):
    """The helper method and the autograd Function's static forward; not the constructor
    (built on the CPU, before the module is moved), not a static or class method."""
    found = _td601(tmp_path, ("nsf.py", SINEGEN), ("tools.py", PICKS_MPS))
    assert found == [(11, "high"), (28, "high")]
