"""Misses of the seventh blind scan corpus (benchmarks/scan_blind7), fixed after it was scored
once blind (recall 63 %, results-blind.md), and a guard bug they uncovered."""

from __future__ import annotations

import textwrap

from torchdoctor.scan.engine import ScanOptions, scan_source


def _lines(src: str) -> list[tuple[int, str]]:
    found, _ = scan_source("m.py", textwrap.dedent(src), ScanOptions(), None)
    return [(f.line, f.rule) for f in found if f.confidence != "low"]


def test_cuda_under_a_true_cpu_flag_is_not_guarded_basicsr_basicvsrpp_cpu_cache():
    """BasicSR's basicvsrpp_arch.py: `if self.cpu_cache: feat = feat.cuda()` runs exactly where
    the features were kept on the CPU, a CPU-only machine or a Mac included: 7 crashes the scan
    missed because a 'cpu' word counted as a CUDA guard. Its else branch still guards, and
    `if not use_cpu:` is the narrow guard TD004 names (on a Mac it is not CUDA either)."""
    src = """
    import torch

    class BasicVSRPlusPlus:
        def propagate(self, feats):
            if self.cpu_cache:
                feats = feats.cuda()
            else:
                other = feats.cuda()
            if not self.use_cpu:
                more = feats.cuda()
            return feats
    """
    assert _lines(src) == [(7, "TD001"), (11, "TD004")]


def test_the_else_of_a_conditional_expression_on_a_cpu_flag_is_guarded_dinov2_eval():
    """`torch.device("cpu") if gather_on_cpu else torch.device("cuda")` (DINOv2's eval utils,
    sixth blind corpus): the CUDA device is the else branch of a CPU test. The if/else
    verdicts of one test were cached as one (both sides were judged alike before)."""
    src = """
    import torch

    class Gatherer:
        def gather(self, gather_on_cpu=False):
            return torch.device("cpu") if gather_on_cpu else torch.device("cuda")
    """
    assert _lines(src) == []
    assert _lines(src.replace("if gather_on_cpu else", "if flag else")) == [(6, "TD002")]
