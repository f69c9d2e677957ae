"""Real-accelerator tests: run only where an NVIDIA GPU and a CUDA build of torch exist.

Everywhere else they are skipped with the reason, never passed vacuously; the same code paths are
covered here by recorded and constructed facts (tests/facts) and stand-in probes.
"""

from __future__ import annotations

import json

import pytest

from torchdoctor.probes import nvml

from .conftest import run_cli


def _gpu_reason() -> str | None:
    info = nvml.gather()
    if info.get("status") != "ok" or not info.get("device_count"):
        return f"no NVIDIA GPU here (NVML: {info.get('error') or 'no devices'})"
    from importlib.util import find_spec

    if find_spec("torch") is None:
        return "torch is not installed"
    return None


REASON = _gpu_reason()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def test_expect_cuda_passes_on_a_healthy_gpu_machine():
    proc = run_cli("check", "--json", "--expect", "cuda", timeout=300)
    doc = json.loads(proc.stdout)
    checks = {c["id"]: c for c in doc["checks"]}
    for cid in ("cuda.driver", "cuda.available", "cuda.devices", "smoke.compute"):
        assert checks[cid]["status"] == "pass", checks[cid]
    smoke = doc["facts"]["smoke"]["devices"]["cuda:0"]
    assert smoke["transfer"]["roundtrip_pinned_exact"] is True
    assert smoke["transfer"]["h2d_pinned_gbps"] > 1.0
    assert smoke["memory"]["returned_mib"] > 0


def test_nvml_and_torch_agree_on_the_devices():
    doc = json.loads(run_cli("check", "--json", "--no-smoke", timeout=300).stdout)
    facts = doc["facts"]
    assert facts["torch"]["cuda"]["device_count"] >= 1
    names = {d["name"] for d in facts["nvml"]["devices"]}
    assert facts["torch"]["cuda"]["devices"][0]["name"] in names


def test_data_parallel_on_the_gpu_is_named_and_its_inner_module_exported():
    """The CPU tests wrap a CPU module, which DataParallel runs only where there is no GPU."""
    import torch
    from torch import nn

    import torchdoctor

    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)).cuda().eval()
    x = torch.randn(5, 4, device="cuda")
    findings = torchdoctor.audit_export(nn.DataParallel(model), x, target="cuda")
    assert [f.id for f in findings] == ["export.data-parallel"], findings
