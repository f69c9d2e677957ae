"""What sets 201-208 of the blind corpora showed (benchmarks/scan_blind201..208): false findings
of the default output and two crashes it missed, each in the shape of the real code (the torch
floor of a root's AGENT_requirements.txt is tested in test_scan_config.py)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchdoctor.scan import ScanOptions, scan_paths
from torchdoctor.scan.engine import scan_source


def found(src: str, confidence: str = "low") -> list[tuple[str, int, str]]:
    findings, _ = scan_source("main.py", textwrap.dedent(src), ScanOptions(confidence=confidence))
    return [(f.rule, f.line, f.confidence) for f in findings]


SYNCHRONIZE = """
import torch

def _synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps" and hasattr(torch, "mps") and hasattr(torch.mps, "synchronize"):
        torch.mps.synchronize()
"""


def test_hasattr_mps_after_the_device_is_known_to_be_mps_bezier_splatting():
    """ryanlyn/bezier-splatting's src/eval/core.py (set 203): the `hasattr(torch, "mps")` only
    guards an old torch; `device.type == "mps"` in the same test already chose the branch."""
    assert [r for r in found(SYNCHRONIZE) if r[0] == "TD008"] == []


def test_hasattr_mps_alone_still_chooses_the_branch():
    src = SYNCHRONIZE.replace('device.type == "mps" and ', "")
    assert ("TD008", 7, "high") in found(src)


def test_a_comparison_with_another_device_kind_does_not_gate_mps():
    src = SYNCHRONIZE.replace('elif device.type == "mps"', 'elif device.type != "cpu"')
    assert ("TD008", 7, "high") in found(src)


PCCLS = """
import torch
import torch.nn as nn

def train(cfg):
    model = nn.DataParallel(build_model(cfg.model).cuda())
    return model

if __name__ == "__main__":
    for i in range(10):
        cfg = load()
        assert torch.cuda.is_available() and cfg.mode in ["train", "test"]
        train(cfg)
"""


def test_a_script_that_asserts_cuda_in_its_main_block_runs_on_cuda_only_pccls():
    """zswldxb/PCCLS's tools/main.py (set 204): `__main__` asserts CUDA before calling train(),
    whose `DataParallel(model.cuda())` therefore never meets a machine without CUDA: shown only
    at --confidence low."""
    assert found(PCCLS) == [("TD202", 6, "low")]


def test_an_assert_inside_one_function_does_not_make_the_file_cuda_only():
    src = PCCLS.replace(
        '        assert torch.cuda.is_available() and cfg.mode in ["train", "test"]\n', ""
    ).replace(
        "    return model\n",
        "    return model\n\ndef other():\n    assert torch.cuda.is_available()\n",
    )
    assert found(src) == [("TD202", 6, "high")]


SLEEP = """
import torch

gpu_num = 0
device = f"cuda:{gpu_num}" if torch.cuda.is_available() else "cpu"
torch.cuda.set_device(device)
"""


def test_set_device_given_the_files_own_cpu_fallback_sleep_pytorch(tmp_path):
    """dongyyyyy/Sleep_pytorch's trainers (set 208) pick `cuda:N` or the CPU, then call
    `torch.cuda.set_device(device)` unguarded: on the CPU they fell back to it raises
    `ValueError: Expected a cuda device, but got: cpu` (torch 2.13.0+cpu). The code proves it, so
    the class's measured share does not lower it."""
    (finding,) = scan_source("train.py", SLEEP, ScanOptions(confidence="low"))[0]
    assert (finding.rule, finding.line, finding.confidence, finding.proven) == (
        "TD003",
        6,
        "high",
        True,
    )
    shown = scan_paths_of(SLEEP, tmp_path)
    assert [(f.rule, f.confidence) for f in shown] == [("TD003", "high")]


def test_set_device_given_a_device_that_is_always_cuda_keeps_the_measured_class(tmp_path):
    src = SLEEP.replace('if torch.cuda.is_available() else "cpu"', "")
    (finding,) = scan_source("train.py", src, ScanOptions(confidence="low"))[0]
    assert not finding.proven
    assert scan_paths_of(src, tmp_path) == []  # calibrated to low: not in the default output


def scan_paths_of(src: str, tmp: Path) -> list:
    """The default output of a scan of a tree holding this one file."""
    (tmp / "train.py").write_text(src)
    return scan_paths([str(tmp)], ScanOptions(), jobs=1).findings


def test_a_parameter_of_the_same_name_is_the_callers_device_not_the_files_pick():
    src = SLEEP + "\n\ndef place(device):\n    torch.cuda.set_device(device)\n"
    findings, _ = scan_source("train.py", src, ScanOptions(confidence="low"))
    assert [(f.line, f.proven) for f in findings] == [(6, True), (10, False)]


@pytest.mark.parametrize(
    "src",
    [
        SLEEP.replace(
            "torch.cuda.set_device(device)",
            "for device in range(4):\n    torch.cuda.set_device(device)",
        ),
        SLEEP + "assert torch.cuda.is_available()\n",  # the script stops without CUDA first
        SLEEP + "from torch.utils.cpp_extension import load\nload(name='k', sources=['k.cu'])\n",
    ],
)
def test_the_proven_case_needs_the_pick_to_be_the_only_binding_and_the_file_to_need_no_cuda(src):
    findings, _ = scan_source("train.py", src, ScanOptions(confidence="low"))
    assert [f.proven for f in findings if f.rule == "TD003"] == [False]


def test_asserts_in_a_nested_branch_or_with_an_alternative_do_not_make_the_file_cuda_only():
    src = PCCLS.replace(
        '        assert torch.cuda.is_available() and cfg.mode in ["train", "test"]\n',
        '        if "--gpu" in sys.argv:\n            assert torch.cuda.is_available()\n'
        '        assert torch.cuda.is_available() or "--cpu" in sys.argv\n',
    )
    assert found(src) == [("TD202", 6, "high")]
