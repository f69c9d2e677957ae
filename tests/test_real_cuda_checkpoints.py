"""Checkpoints torch.save wrote from real CUDA tensors, read where there is no GPU.

tests/facts/cuda_checkpoints/ was written by scripts/cuda_checkpoints.py on a lent NVIDIA H100
(torch 2.11.0+cu130, 2026-11-27); the inspect tests otherwise use files tagged 'cuda:0' by
tests/ckpt_factory.py without a GPU. These check that what inspect and the scan's reading of
committed checkpoints (torchdoctor/scan/committed.py) rely on holds for the real thing, and that
the crafted files are what a GPU writes.
"""

from __future__ import annotations

import json
import shutil

import pytest

from torchdoctor.scan import committed

from .conftest import FACTS_DIR, NO_GPU, needs_torch, plain_load, run_cli
from .scan_tree import scan_tree

REAL = FACTS_DIR / "cuda_checkpoints"
# file -> where torch.save recorded its storages, and how many
LOCATIONS = {
    "state_dict_cuda.pt": {"cuda:0": 9},
    "state_dict_cuda_legacy.pt": {"cuda:0": 9},
    "mixed_cuda_cpu.pt": {"cuda:0": 1, "cpu": 1},
    "checkpoint_cuda.pt": {"cuda:0": 15},
    "module_cuda.pt": {"cuda:0": 9},
}
files = pytest.mark.parametrize("name", sorted(LOCATIONS))


def inspect(name: str) -> tuple[int, dict]:
    r = run_cli("inspect", str(REAL / name), "--json", env=NO_GPU)
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, json.loads(r.stdout)


@files
def test_committed_reads_where_each_real_file_was_saved(name):
    assert committed.saved_locations(str(REAL / name)) == frozenset(LOCATIONS[name])


@needs_torch
@files
def test_inspect_says_a_real_gpu_checkpoint_does_not_load_here_and_how_to_load_it(name):
    rc, doc = inspect(name)
    assert rc == 1 and doc["loads_as_is"] is False
    assert doc["saved_locations"] == LOCATIONS[name]
    assert "map_location='cpu'" in doc["load_call"]
    assert ("weights_only=False" in doc["load_call"]) == (name == "module_cuda.pt")


@needs_torch
def test_attempting_to_deserialize_object_on_a_cuda_device_from_the_real_file():
    """What inspect and TD101 predict: a plain torch.load of it raises where no GPU is seen."""
    r = plain_load(REAL / "state_dict_cuda.pt")
    assert r.returncode != 0 and "Attempting to deserialize object on a CUDA device" in r.stderr


@needs_torch
def test_the_crafted_cuda_checkpoint_reads_like_the_real_one(ckpts):
    """ckpt_factory's tagged file (the same model's state_dict) against the H100's."""
    for crafted, real in (
        ("cuda_state_dict.pt", "state_dict_cuda.pt"),
        ("legacy_cuda.pt", "state_dict_cuda_legacy.pt"),
    ):
        assert committed.saved_locations(str(ckpts / crafted)) == committed.saved_locations(
            str(REAL / real)
        )
        made = run_cli("inspect", str(ckpts / crafted), "--json", env=NO_GPU)
        _, doc = inspect(real)
        keys = ("format", "saved_locations", "loads_as_is", "content")
        assert {k: json.loads(made.stdout)[k] for k in keys} == {k: doc[k] for k in keys}


SCRIPT = """\
    import os
    import torch
    DIR = os.path.dirname(os.path.abspath(__file__))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    data = torch.load(os.path.join(DIR, "expert-data.pt"), weights_only=True)
"""


@pytest.mark.parametrize("name", ["state_dict_cuda.pt", "mixed_cuda_cpu.pt"])
def test_a_committed_real_gpu_checkpoint_proves_td101_in_a_file_that_falls_back(tmp_path, name):
    """The file falls back to the CPU and loads a checkpoint committed beside it: on the CPU
    that load fails, whatever share of such findings was real elsewhere, so the finding is
    high even without --portable, and its grounds name the file."""
    shutil.copy(REAL / name, tmp_path / "expert-data.pt")
    assert scan_tree(tmp_path, {"train.py": SCRIPT}) == [("train.py", 5, "TD101", "high")]
