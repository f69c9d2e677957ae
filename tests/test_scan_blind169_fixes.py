"""False findings of the blind sets 169-176 (twentieth session), fixed after their one scoring:
each test reproduces the public code the labellers judged, reduced to what decides it."""

from __future__ import annotations

from torchdoctor.scan import ScanOptions
from torchdoctor.scan.cuda_only import cuda_only_reason

from .scan_tree import scan_tree as scan

# --portable: the rules' own confidence, before the calibration lowers whole classes
OWN = ScanOptions(confidence="low", portable=True)

POINTMLP_MODEL = """
import torch
import torch.nn as nn
from pointnet2_ops import pointnet2_utils


class PointMLP(nn.Module):
    def forward(self, xyz):
        idx = pointnet2_utils.furthest_point_sample(xyz, 512).long()
        return idx
"""
POINTMLP_MODELS_INIT = "from .pointMLP import PointMLP\n"
POINTMLP_MAIN = """
import torch
import model as models


def train(args, loader):
    device = torch.device("cuda" if args.cuda else "cpu")
    net = models.PointMLP().to(device)
    for points, target in loader:
        points, target = points.cuda(non_blocking=True), target.cuda(non_blocking=True)
        net(points)
"""


def test_pointmlp_part_segmentation_imports_pointnet2_ops_so_it_is_cuda_only(tmp_path):
    """ma-xu/pointMLP-pytorch's part_segmentation/main.py: `.cuda()` beside an `args.cuda`
    fallback, but every model imports pointnet2_ops, whose kernels raise 'CPU not supported':
    the labeller called the twelve `.cuda()` lines lookalikes of a CUDA-only project."""
    files = {
        "model/__init__.py": POINTMLP_MODELS_INIT,
        "model/pointMLP.py": POINTMLP_MODEL,
        "main.py": POINTMLP_MAIN,
    }
    found = [f for f in scan(tmp_path, files, OWN) if f[2] == "TD001"]
    assert found and all(conf == "low" for *_, conf in found)
    assert cuda_only_reason(POINTMLP_MODEL) == (
        "the file imports PointNet++ ops (pointnet2_ops): it runs on CUDA only"
    )


def test_pointnet2_ops_imported_inside_try_is_not_a_marker():
    """pointnet2_ops_lib's own pointnet2_utils.py imports its `_ext` inside `try` (a JIT build
    follows): only a top-level import says the file cannot run without the kernels."""
    text = "try:\n    import pointnet2_ops._ext as _ext\nexcept ImportError:\n    pass\n"
    assert cuda_only_reason(text) is None
