"""A test on the number of processes guards like a device test (issue 20's noise class 'code
that only ever runs on CUDA: a script that starts NCCL DDP'): facebookresearch/demucs'
distrib.py puts device='cuda' after `if world_size == 1: return`, reached only in multi-GPU
training (the second blind corpus, benchmarks/scan_blind2)."""

from __future__ import annotations

import json

from .conftest import run_cli

DISTRIB = """import torch

world_size = 1


def average(metrics):
    if world_size == 1:
        return metrics
    tensor = torch.tensor(list(metrics), device="cuda")
    torch.distributed.all_reduce(tensor)
    return tensor.cpu().tolist()


def share(obj):
    if not args.distributed:
        return obj
    return torch.empty(1, device="cuda")
"""

UNGUARDED = """import torch


def average(metrics):
    return torch.tensor(list(metrics), device="cuda").cpu().tolist()
"""


def _rules(tmp_path, text: str) -> list[str]:
    (tmp_path / "distrib.py").write_text(text)
    out = run_cli("scan", str(tmp_path), "--format", "json")
    return [f["id"] for f in json.loads(out.stdout)["findings"]]


def test_demucs_distrib_cuda_after_world_size_early_return_is_not_flagged(tmp_path):
    assert "TD002" not in _rules(tmp_path, DISTRIB)


def test_the_same_line_without_the_guard_still_is(tmp_path):
    assert "TD002" in _rules(tmp_path, UNGUARDED)
