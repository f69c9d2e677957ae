"""What blind sets 396-403 showed the rules got wrong, fixed after their one scoring (not blind
for these lines): each test is named after the labelled line it reproduces."""

from __future__ import annotations

import textwrap

import pytest

from torchdoctor.scan.engine import ScanOptions, scan_source

LAND = """
import torch as th


def prepare(minmax_path, data):
    min_val, max_val = data.min(), data.max()
    th.save(th.tensor([min_val, max_val]), minmax_path)


def train(minmax_path, device):
    model = Net().to(device)
    boundaries = th.load(minmax_path, weights_only=True)
    return model, boundaries
"""


def rules(src: str) -> list[str]:
    found = scan_source("m.py", textwrap.dedent(src), ScanOptions(confidence="low"))[0]
    return [f.rule for f in found]


def test_a_file_saved_from_a_tensor_built_of_numbers_holds_cpu_tensors_land_data_inpainting():
    """LisaDaVinchie/Land_data_inpainting's train2.py 80 (set 396), labelled a lookalike:
    `th.save(th.tensor([min_val, max_val]), minmax_path)` writes a CPU tensor (torch imported as
    `th`), so `th.load(minmax_path)` needs no map_location."""
    assert rules(LAND) == []


@pytest.mark.parametrize(
    "saved",
    [
        "th.tensor(data.max())",  # a copy of another tensor keeps its device
        "th.tensor([min_val, max_val], device=data.device)",
    ],
)
def test_a_tensor_built_from_a_device_tensor_may_hold_cuda_storages(saved):
    assert rules(LAND.replace("th.tensor([min_val, max_val])", saved)) == ["TD101"]


WELDING = """
import os
from pathlib import Path

import torch


def _atomic_save(obj, path):
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def train(cfg, model, device):
    ckpt_dir = Path(cfg.checkpoint_dir)
    model.to(device)
    for epoch in range(cfg.epochs):
        step(model)
        _atomic_save({"model_state": model.state_dict()}, ckpt_dir / "best_model.pt")
    best_path = ckpt_dir / "best_model.pt"
    model.load_state_dict(torch.load(best_path, weights_only=True)["model_state"])
"""


def test_a_reload_of_what_a_saving_helper_wrote_in_the_loop_is_the_same_run_meshgraphnet():
    """dcanales-lu/meshgraphnet-welding's train.py 560 (set 400), labelled a lookalike: the
    trainer writes best_model.pt through `_atomic_save(obj, path)` (torch.save to a temporary
    file beside `path`, then os.replace) and loads it back after the loop, on its device."""
    assert rules(WELDING) == []


def test_a_helper_that_saves_to_a_fixed_name_does_not_write_the_loaded_path():
    src = WELDING.replace("torch.save(obj, tmp)", 'torch.save(obj, "elsewhere.pt")')
    assert rules(src) == ["TD101"]


VERIFY = """
import torch


def load_feat(feat_path):
    try:
        feat = torch.load(feat_path, map_location="cpu", weights_only=True)
    except{handler}:
        feat = torch.load(feat_path, map_location="cpu")
    return feat
"""


@pytest.mark.parametrize(
    ("handler", "flagged"), [("", True), (" Exception", True), (" TypeError", False)]
)
def test_a_full_unpickling_after_weights_only_refused_the_file_speaker_verification(
    handler, flagged
):
    """zhangzijie-pro/Speaker-Verification's verify.py 90 (set 400): `try: torch.load(p,
    weights_only=True) except: torch.load(p)` unpickles in full the very file the safe load
    refused. Only `except TypeError:` is the fallback for a torch without the keyword."""
    assert (rules(VERIFY.format(handler=handler)) == ["TD102"]) is flagged
    assert rules(VERIFY.format(handler=handler)) in ([], ["TD102"])
