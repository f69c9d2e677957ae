"""macOS as a virtual machine (mps.vm): pytorch/pytorch#125197, "PyTorch on macos-14.xlarge
reports MPS is available when it is not": GitHub's hosted macOS runners are VMs whose
paravirtual GPU reports MPS, then model loading on it fails."""

from __future__ import annotations

import json

from .conftest import REPO, judge_facts


def _mps(tmp_path, vm: bool | None) -> list[dict]:
    facts = json.loads((REPO / "tests" / "facts" / "mps_mac.json").read_text())
    if vm is not None:
        facts["platform"]["vm"] = vm
    return [f for f in judge_facts(tmp_path, facts) if f["id"].startswith("mps")]


def test_pytorch_125197_macos_14_runner_vm_reports_mps_that_does_not_run(tmp_path):
    [found] = _mps(tmp_path, True)
    assert found["id"] == "mps.vm" and found["level"] == "warning"
    assert "virtual machine" in found["message"]
    assert "platform.vm" in found["remedies"][0]["evidence"]


def test_bare_metal_apple_silicon_and_older_facts_stay_quiet(tmp_path):
    assert _mps(tmp_path, False) == []
    assert _mps(tmp_path, None) == []  # recorded before the probe read kern.hv_vmm_present
