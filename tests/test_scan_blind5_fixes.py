"""Lookalikes of the fifth blind scan corpus (benchmarks/scan_blind5), fixed after it was
scored once blind (49 %, results-blind.md): one test per class, in the real code's shape."""

from __future__ import annotations

import textwrap

import pytest

from torchdoctor.scan import ScanOptions, scan_paths
from torchdoctor.scan.engine import scan_source

# the rules' own reasoning, before the blind calibration (test_scan_calibration.py)
pytestmark = pytest.mark.usefixtures("uncalibrated")


def _rules(src: str) -> list[tuple[int, str, str]]:
    found, _ = scan_source("m.py", textwrap.dedent(src), ScanOptions(), None)
    return [(f.line, f.rule, f.confidence) for f in found]


def test_torch_load_in_the_cuda_branch_needs_no_map_location_wav2lip_load():
    """Wav2Lip's _load: `if use_cuda: torch.load(p)` else `map_location=lambda s, l: s`. The
    CUDA branch runs where CUDA is; weights_only is still missing in both."""
    src = """
    import torch
    use_cuda = torch.cuda.is_available()

    def _load(checkpoint_path):
        if use_cuda:
            checkpoint = torch.load(checkpoint_path)
        else:
            checkpoint = torch.load(checkpoint_path, map_location=lambda storage, loc: storage)
        return checkpoint
    """
    found = _rules(src)
    assert [r for _, r, _ in found] == ["TD102", "TD102"]


def test_objects_the_jobs_ranks_serialise_and_exchange_are_not_flagged_sam2_all_gather():
    """sam2's training/utils/distributed.py: torch.save into a BytesIO (or a shared folder),
    dist.all_gather, torch.load of what came back. A conversion script (load a user's file,
    save another) keeps both findings."""
    gather = """
    import io
    import torch
    import torch.distributed as dist

    def all_gather(data):
        buffer = io.BytesIO()
        torch.save(data, buffer)
        t = torch.ByteTensor(list(buffer.getvalue()))
        out = [t.clone() for _ in range(dist.get_world_size())]
        dist.all_gather(out, t)
        return [torch.load(io.BytesIO(bytes(x.tolist()))) for x in out]
    """
    assert _rules(gather) == []
    convert = """
    import torch

    def convert(src, dst):
        sd = torch.load(src)
        torch.save(sd, dst)
    """
    assert {r for _, r, _ in _rules(convert)} == {"TD101", "TD102"}


def test_a_torch_device_cuda_default_every_caller_overrides_is_not_td002_sam2_load_video_frames():
    """sam2's load_video_frames(…, compute_device=torch.device("cuda")): every caller passes
    compute_device. TD005 judges defaults against the callers; TD002 no longer fires on them."""
    src = """
    import torch

    def load_video_frames(path, compute_device=torch.device("cuda")):
        return torch.zeros(3, device=compute_device)

    def run(path, device):
        return load_video_frames(path, compute_device=device)

    def build(device=torch.device("cuda")):
        return torch.zeros(1, device=device)
    """
    assert _rules(src) == [(10, "TD005", "low")]  # build: public, never called here


def test_a_project_that_never_names_a_device_keeps_its_tensors_on_the_cpu_minimalrl(tmp_path):
    """seungeunrho/minimalRL: no file names cuda, mps, a device or .to(); a tensor attribute of
    a module (TD301) and a per-step .item() (TD402) cost nothing there. Once any file moves
    something to a device, they count again."""
    (tmp_path / "vtrace.py").write_text(
        textwrap.dedent(
            """
            import torch
            import torch.nn as nn

            class Model(nn.Module):
                def __init__(self, clip):
                    super().__init__()
                    self.fc = nn.Linear(4, 2)
                    self.clip = torch.tensor(clip, dtype=torch.float)

                def forward(self, x):
                    return self.fc(x).clamp(max=self.clip)
            """
        )
    )
    (tmp_path / "a3c.py").write_text("import torch\n\nx = torch.ones(1)\n")
    opts = ScanOptions(confidence="low")
    found = {f.rule: f.confidence for f in scan_paths([str(tmp_path)], opts, jobs=1).findings}
    assert found.get("TD301") == "low"
    (tmp_path / "train.py").write_text("import vtrace\nmodel = vtrace.Model(1.0).to('cuda')\n")
    found = {f.rule: f.confidence for f in scan_paths([str(tmp_path)], opts, jobs=1).findings}
    assert found.get("TD301") not in (None, "low")
