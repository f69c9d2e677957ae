"""Lookalikes of the eighth blind scan corpus (benchmarks/scan_blind8), fixed after it was
scored once blind (43 %, results-blind.md)."""

from __future__ import annotations

import textwrap

from torchdoctor.scan.engine import ScanOptions, scan_source


def _found(src: str) -> list[tuple[str, str]]:
    found, _ = scan_source("m.py", textwrap.dedent(src), ScanOptions(), None)
    return [(f.rule, f.confidence) for f in found]


def test_torch_device_cuda_rank_is_one_process_per_gpu_stylegan3_training_loop():
    """NVlabs/stylegan3's training/training_loop.py: `device = torch.device('cuda', rank)`,
    then CUDA events and streams for its timing: one process per GPU, like `.cuda(rank)`."""
    src = """
    import torch

    class TrainingLoop:
        def run(self, rank=0):
            device = torch.device('cuda', rank)
            start = torch.cuda.Event(enable_timing=True)
            start.record(torch.cuda.current_stream(device))
            torch.cuda.reset_peak_memory_stats()
    """
    found = _found(src)
    assert found and {c for _, c in found} == {"low"}
    assert ("TD003", "high") in _found(src.replace("torch.device('cuda', rank)", "pick()"))


def test_a_hard_coded_pinned_dataloader_is_low_it_only_warns_deep_text_recognition():
    """clovaai/deep-text-recognition-benchmark: `DataLoader(..., pin_memory=True)` in its train,
    test and demo scripts; without an accelerator torch only warns (tests/facts/device_claims)."""
    src = """
    import torch
    from torch.utils.data import DataLoader

    def make(ds):
        return DataLoader(ds, batch_size=64, pin_memory=True)
    """
    assert _found(src) == [("TD501", "low")]
