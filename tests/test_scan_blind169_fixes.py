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


TGN_SCRIPT = """
import torch

device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
get_checkpoint_path = lambda epoch: f"./saved_checkpoints/{epoch}.pth"
for epoch in range(50):
    tgn.train()
    if early_stopper.early_stop_check(val_ap):
        best_model_path = get_checkpoint_path(early_stopper.best_epoch)
        tgn.load_state_dict(torch.load(best_model_path))
        break
    else:
        torch.save(tgn.state_dict(), get_checkpoint_path(epoch))
"""
CTGCN_TRAIN = """
import os
import torch


class Embedding:
    def learn(self, model, model_file, epochs):
        device = "cuda" if torch.cuda.is_available() else "cpu"
        for epoch in range(epochs):
            if better:
                torch.save(model.state_dict(), os.path.join(self.model_base_path, model_file))
        model.load_state_dict(torch.load(os.path.join(self.model_base_path, model_file)))
"""


def _td101_lines(tmp_path, name, text):
    return [f[1] for f in scan(tmp_path, {name: text}, OWN) if f[2] == "TD101"]


def test_tgn_early_stopping_reloads_the_best_epoch_it_saved_in_the_same_loop(tmp_path):
    """twitter-research/tgn's train_self_supervised.py: the best epoch's file, written by this
    run from the model on its device, is read back in the same run: no map_location needed."""
    assert _td101_lines(tmp_path, "train_self_supervised.py", TGN_SCRIPT) == []


def test_ctgcn_reloads_its_best_model_after_the_training_loop(tmp_path):
    """jhljx/CTGCN's embedding.py: saved in the loop, reloaded after it, same path."""
    assert _td101_lines(tmp_path, "embedding.py", CTGCN_TRAIN) == []


def test_resume_load_before_the_loop_still_reads_another_runs_file(tmp_path):
    """The same save, but the load comes first (a resume): the file may come from a GPU."""
    resume = CTGCN_TRAIN.replace(
        "        for epoch in range(epochs):",
        "        model.load_state_dict(torch.load(os.path.join(self.model_base_path, model_file)))\n"
        "        for epoch in range(epochs):",
    )
    assert _td101_lines(tmp_path, "embedding.py", resume) == [9]


def test_load_in_the_other_branch_of_the_save_reads_another_runs_file(tmp_path):
    """`if args.train: ... torch.save(...)` / `else: torch.load(...)`: evaluation reads a
    checkpoint a training run wrote, maybe on a GPU machine."""
    text = """
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
if args.train:
    for epoch in range(10):
        torch.save(model.state_dict(), args.ckpt)
else:
    model.load_state_dict(torch.load(args.ckpt))
"""
    assert _td101_lines(tmp_path, "main.py", text) == [9]


def test_different_files_joined_in_the_same_folder_are_not_one_file(tmp_path):
    """`os.path.join(out, "a.pt")` saved, `os.path.join(out, "b.pt")` loaded: not the same."""
    text = CTGCN_TRAIN.replace(
        "torch.load(os.path.join(self.model_base_path, model_file))",
        'torch.load(os.path.join(self.model_base_path, "pretrained.pt"))',
    )
    assert _td101_lines(tmp_path, "embedding.py", text) == [12]
