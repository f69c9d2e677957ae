"""TD601 for a float64 cast made on the device just before the move to the CPU:
openai/whisper's timing.py `dtw_cpu(x.double().cpu().numpy())` raises "Cannot convert a MPS
Tensor to float64 dtype" with word timestamps on a Mac (openai/whisper#2704; the first blind
scan corpus, benchmarks/scan_blind). Moving first, then casting, is right everywhere."""

from __future__ import annotations

import json

from .conftest import run_cli

WHISPER = """import torch


def dtw(x: torch.Tensor):
    return dtw_cpu(x.double().cpu().numpy())


def as_float64(x):
    return x.to(torch.float64).cpu()


def right(x):
    return x.cpu().double()


def host_only(x):
    return x.double()
"""


def test_whisper_timing_double_before_cpu_is_td601(tmp_path):
    (tmp_path / "timing.py").write_text(WHISPER)
    # --portable: a project that must run without CUDA (whisper runs on Macs) gets the rule's own
    # confidence; without it the measured class decides (2 of 6 repositories real: `low`)
    out = run_cli("scan", str(tmp_path), "--format", "json", "--portable")
    found = [f for f in json.loads(out.stdout)["findings"] if f["id"] == "TD601"]
    assert sorted(int(f["subject"].split(":")[1]) for f in found) == [5, 9]
    assert all(f["confidence"] == "medium" for f in found)
    plain = run_cli("scan", str(tmp_path), "--format", "json", "--confidence", "low")
    lowered = [f for f in json.loads(plain.stdout)["findings"] if f["id"] == "TD601"]
    assert {f["confidence"] for f in lowered} == {"low"}
    assert ".cpu().double()" in found[0]["remedies"][0]["text"]
