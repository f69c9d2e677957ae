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
    """Every finding, whatever its confidence: a guarded line gives none at all."""
    (tmp_path / "distrib.py").write_text(text)
    out = run_cli("scan", str(tmp_path), "--format", "json", "--confidence", "low")
    return [f["id"] for f in json.loads(out.stdout)["findings"]]


def test_demucs_distrib_cuda_after_world_size_early_return_is_not_flagged(tmp_path):
    assert "TD002" not in _rules(tmp_path, DISTRIB)


def test_the_same_line_without_the_guard_still_is(tmp_path):
    assert "TD002" in _rules(tmp_path, UNGUARDED)


COMPREHENSION = """import torch

PROFILES = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
GUARDED = [torch.cuda.get_device_name(d.index) for d in PROFILES if d.type == "cuda"]
BY_INDEX = {d.index: torch.cuda.get_device_name(d.index) for d in PROFILES if d.type == "cuda"}
UNGUARDED = [torch.cuda.get_device_name(d.index) for d in PROFILES]
"""


def test_rvc_config_comprehension_filtered_on_device_type_cuda_is_guarded(tmp_path):
    """RVC-Project's configs/config.py (second blind corpus): `get_device_name` inside a
    comprehension whose `if d.type == "cuda"` guards it; the same call unfiltered is flagged."""
    (tmp_path / "config.py").write_text(COMPREHENSION)
    out = run_cli("scan", str(tmp_path), "--format", "json", "--confidence", "low")
    td003 = [f for f in json.loads(out.stdout)["findings"] if f["id"] == "TD003"]
    assert [int(f["subject"].split(":")[1]) for f in td003] == [6]


VLLM_RUNNER = """import torch
from vllm.model_executor import InputMetadata


def capture(batch):
    input_tokens = torch.zeros(batch, dtype=torch.long).cuda()
    return torch.tensor([0], device="cuda"), input_tokens
"""


def test_chattts_vllm_derived_model_runner_is_cuda_only_and_kept_low(tmp_path):
    """2noise/ChatTTS's velocity/model_runner.py (third blind corpus): vLLM engine internals,
    CUDA graphs and device="cuda" throughout; shown only with --confidence low."""
    (tmp_path / "model_runner.py").write_text(VLLM_RUNNER)
    default = run_cli("scan", str(tmp_path), "--format", "json")
    assert json.loads(default.stdout)["findings"] == []
    low = run_cli("scan", str(tmp_path), "--format", "json", "--confidence", "low")
    found = json.loads(low.stdout)["findings"]
    assert {f["id"] for f in found} >= {"TD001", "TD002"}
    assert all(f["confidence"] == "low" for f in found)
