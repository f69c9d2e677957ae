"""Lookalikes of the sixth blind scan corpus (benchmarks/scan_blind6), fixed after it was
scored once blind (29 %, results-blind.md): one test per class, in the real code's shape."""

from __future__ import annotations

import textwrap

from torchdoctor.scan.engine import ScanOptions, scan_source


def _rules(src: str, shown: str = "medium") -> list[str]:
    found, _ = scan_source("m.py", textwrap.dedent(src), ScanOptions(), None)
    order = ("low", "medium", "high")
    return [f.rule for f in found if order.index(f.confidence) >= order.index(shown)]


def test_a_weights_file_shipped_inside_the_package_is_loaded_as_code_facenet_mtcnn():
    """facenet-pytorch's models/mtcnn.py: torch.load(os.path.join(os.path.dirname(__file__),
    '../data/pnet.pt')). Shipped with the code, as trusted as the code; a user's path is not."""
    src = """
    import os
    import torch

    class PNet(torch.nn.Module):
        def __init__(self, pretrained=True):
            super().__init__()
            if pretrained:
                state_dict_path = os.path.join(os.path.dirname(__file__), "../data/pnet.pt")
                state_dict = torch.load(state_dict_path)
                self.load_state_dict(state_dict)

    def load_user(path):
        return torch.load(path)
    """
    found, _ = scan_source("m.py", textwrap.dedent(src), ScanOptions(), None)
    assert {(f.line, f.rule) for f in found} == {(14, "TD101"), (14, "TD102")}


def test_one_process_per_gpu_on_the_gpu_of_its_rank_is_cuda_only_vits_arcface():
    """`.cuda(rank)` (vits, RVC, MeloTTS trainers) and `torch.cuda.Stream(local_rank)`
    (SadTalker's arcface_torch partial_fc.py): every such line in five corpora was a lookalike."""
    src = """
    import torch

    class Trainer:
        def run(self, rank, hps):
            net_g = Synthesizer(**hps.model).cuda(rank)
            x = torch.ones(3).cuda()
            torch.cuda.synchronize()
    """
    assert _rules(src) == []
    assert set(_rules(src, "low")) == {"TD001", "TD003"}
    assert "TD001" in _rules(src.replace(".cuda(rank)", ".cuda(device)"))


def test_a_factory_put_on_the_cpu_on_purpose_in_forward_real_time_voice_cloning():
    """vocoder/models/fatchord_version.py: `torch.zeros(1, b, n).cpu()` in the non-CUDA branch;
    the same factory without `.cpu()` stays TD302."""
    src = """
    import torch

    class Voc(torch.nn.Module):
        def forward(self, x):
            h1 = torch.zeros(1, x.size(0), 8).cpu()
            return x + h1
    """
    assert "TD302" not in _rules(src)
    assert "TD302" in _rules(src.replace(".cpu()", ""))


def test_an_item_written_into_a_progress_message_is_shown_real_time_voice_cloning():
    """synthesizer/train.py: `loss_window.append(loss.item())`, then
    `msg = f"| Loss: {loss_window.average:#.4} |"` and `stream(msg)`."""
    src = """
    import torch

    def train(model, loader, opt, stream):
        loss_window = []
        for x, y in loader:
            loss = model(x, y)
            loss.backward()
            opt.step()
            loss_window.append(loss.item())
            msg = f"| Loss: {sum(loss_window) / len(loss_window):#.4} |"
            stream(msg)
    """
    assert "TD402" not in _rules(src)
    quiet = src.replace('msg = f"| Loss: {sum(loss_window) / len(loss_window):#.4} |"', "msg = 1")
    assert "TD402" in _rules(quiet)
