"""What blind sets 372-379 showed the rules got wrong, fixed after their one scoring (not blind
for these lines): each test is named after the labelled line it reproduces."""

from __future__ import annotations

import textwrap

import pytest

from torchdoctor.scan.engine import ScanOptions, scan_source


def rules(src: str) -> list[tuple[str, int, str]]:
    found = scan_source("m.py", textwrap.dedent(src), ScanOptions(confidence="low"))[0]
    return [(f.rule, f.line, f.confidence) for f in found]


@pytest.mark.parametrize("key", ["torch.has_cuda", "torch.backends.cuda.is_built()"])
def test_a_pick_keyed_by_has_cuda_sends_a_cpu_machine_to_cuda_fast_style_transfer(key):
    """igreat/fast-style-transfer's stylize_image.py 9 (set 377): `{torch.has_cuda: "cuda",
    torch.has_mps: "mps"}.get(True, "cpu")` picks "cuda" on the default Linux wheel with no
    GPU, where the stylizer's `.to(device)` raises."""
    src = f"""
    import torch

    device = {{{key}: "cuda", torch.has_mps: "mps"}}.get(True, "cpu")
    """
    assert rules(src) == [("TD006", 4, "high")]


def test_a_pick_keyed_by_a_real_availability_test_is_quiet():
    src = """
    import torch

    device = {torch.cuda.is_available(): "cuda", torch.backends.mps.is_available(): "mps"}.get(
        True, "cpu"
    )
    """
    assert rules(src) == []


def test_a_load_read_straight_into_numpy_holds_cpu_tensors_latent_flexible_video_diffusion():
    """plai-group/latent-flexible-video-diffusion-modeling's carla_regressor.py 23 (set 378):
    `video = th.load(video_path / fname).numpy()`, labelled a lookalike: `.numpy()` of a CUDA
    tensor raises (recorded on the H200: "can't convert cuda:0 device type tensor to numpy"),
    so the file holds CPU tensors. TD102 stays."""
    src = """
    import torch as th

    device = "cuda" if th.cuda.is_available() else "cpu"


    def frames(video_path, fname):
        return th.load(video_path / fname).numpy()
    """
    assert [r for r, _, _ in rules(src)] == ["TD102"]
    assert "TD101" in [r for r, _, _ in rules(src.replace(").numpy()", ").float()"))]


AUTOENCODER = """
import torch
from torch import nn
from utils.early_stop import EarlyStopping

device = "cuda" if torch.cuda.is_available() else "cpu"


class LSTMAE(nn.Module):
    def __init__(self, checkpoint_path="./checkpoint.pt"):
        super().__init__()
        self.checkpoint_path = checkpoint_path

    def fit(self, loader, epochs):
        early_stopping = EarlyStopping(patience=20, checkpoint_path=self.checkpoint_path)
        for epoch in range(epochs):
            loss = self.step(loader)
            early_stopping(loss, self)
            if early_stopping.early_stop:
                break
        self.load_state_dict(torch.load(self.checkpoint_path))
"""


def test_a_reload_of_the_file_an_early_stopper_built_with_its_path_wrote_unsupervised_anomaly():
    """MaherDissem/Unsupervised-Anomaly-Detection-...'s autoencoder.py 164 (set 375), labelled a
    lookalike: the EarlyStopping built with `checkpoint_path=self.checkpoint_path` and handed
    the model (`self`) in the loop saves that file in the same run, on the same device."""
    assert [r for r, _, _ in rules(AUTOENCODER)] == ["TD102"]
    other = AUTOENCODER.replace("torch.load(self.checkpoint_path)", "torch.load(self.best_path)")
    assert [r for r, _, _ in rules(other)] == ["TD101", "TD102"]
