"""Lookalikes of the fourth blind scan corpus (benchmarks/scan_blind4), fixed after scoring it
once blind: each test is one lookalike class, with the real shape of the code it came from."""

from __future__ import annotations

import textwrap

from torchdoctor.scan.engine import ScanOptions, scan_source

TRAINER = """
import torch

class Trainer:
    def __init__(self, config, gpu):
        self.gpu = gpu
        torch.cuda.set_device(self.gpu)

    def train(self, loader, model):
        model = model.cuda()
        for images, labels in loader:
            images = images.cuda(non_blocking=True)
            loss = model(images, labels)
"""


def _found(src: str, shown: str = "medium") -> list[tuple[str, str]]:
    """(rule, confidence) of what `scan --confidence SHOWN` prints (default: medium)."""
    found, _ = scan_source("train.py", textwrap.dedent(src), ScanOptions(), None)
    floor = ("low", "medium", "high").index(shown)
    return [
        (f.rule, f.confidence)
        for f in found
        if ("low", "medium", "high").index(f.confidence) >= floor
    ]


def test_a_trainer_pinned_to_a_gpu_with_no_other_device_path_is_cuda_only_easyocr_craft():
    """EasyOCR's trainer/craft/train.py: torch.cuda.set_device(self.gpu), then .cuda()
    everywhere, and no CPU or MPS path at all: 11 findings a maintainer would not change."""
    assert _found(TRAINER) == []  # the default output
    low = _found(TRAINER, "low")
    assert {r for r, _ in low} == {"TD001", "TD003"} and {c for _, c in low} == {"low"}


def test_set_device_beside_a_cpu_path_keeps_the_findings():
    src = TRAINER.replace("        torch.cuda.set_device(self.gpu)\n", "").replace(
        "        self.gpu = gpu\n",
        "        self.gpu = gpu\n        torch.cuda.set_device(self.gpu)\n"
        "        self.device = 'cuda' if torch.cuda.is_available() else 'cpu'\n",
    )
    # training code (train.py) that falls back to the CPU itself: shown, at medium
    assert ("TD001", "medium") in _found(src)


def test_an_item_summed_then_printed_as_a_mean_is_a_sync_on_purpose_easyocr_craft():
    """`loss_value += loss.item()`, then every 5 steps `mean_loss = loss_value / 5` and a
    print of mean_loss: shown, through one assignment."""
    src = """
    import torch
    def train(model, loader, opt):
        loss_value = 0
        for step, (x, y) in enumerate(loader):
            loss = model(x, y)
            loss.backward()
            opt.step()
            loss_value += loss.item()
            if step % 5 == 0:
                mean_loss = loss_value / 5
                loss_value = 0
                print("loss {:.5f}".format(mean_loss))
    """
    assert _found(src) == []
    assert ("TD402", "medium") in _found(
        src.replace('print("loss {:.5f}".format(mean_loss))', "pass")
    )
