"""Make the checkpoint files the inspect tests read (run as a child: it imports torch).

`python tests/ckpt_factory.py DIR` writes:
- cpu_state_dict.pt       a plain state_dict saved on the CPU
- cuda_state_dict.pt      the same, its storages tagged 'cuda:0' — made without a GPU through
                          torch.serialization.register_package, whose tagger names the location
                          torch.save records for each storage
- checkpoint.pt           {"model": state_dict, "optimizer": optimizer.state_dict(), "epoch": 3}
- pickled_module.pt       torch.save(model): a pickled nn.Module, which weights_only refuses
- legacy_cuda.pt          the old (pre-zip) format, CUDA-tagged
- dp_state_dict.pt        nn.DataParallel(model).state_dict(): every key starts with `module.`
- dp_checkpoint.pt        {"state_dict": that prefixed state dict, "epoch": 1}
- weights.safetensors     written by hand (8-byte header length, JSON header, raw data)
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import torch
from torch import nn
from torch.serialization import _package_registry, register_package


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2))


def save_as_cuda(obj, path: Path, **kwargs) -> None:
    """torch.save with every CPU storage recorded as saved from cuda:0."""
    tagger = lambda storage: "cuda:0" if storage.device.type == "cpu" else None  # noqa: E731
    register_package(-1, tagger, lambda obj, location: None)
    try:
        torch.save(obj, path, **kwargs)
    finally:
        del _package_registry[[e[1] for e in _package_registry].index(tagger)]


def safetensors(path: Path) -> None:
    data = struct.pack("<6f", *range(6)) + struct.pack("<2q", 7, 8)
    header = {
        "__metadata__": {"format": "pt"},
        "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
        "step": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]},
    }
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + data)


def main(out: Path) -> None:
    m = model()
    torch.save(m.state_dict(), out / "cpu_state_dict.pt")
    save_as_cuda(m.state_dict(), out / "cuda_state_dict.pt")
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    m(torch.randn(5, 4)).sum().backward()
    opt.step()
    torch.save(
        {"model": m.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, out / "checkpoint.pt"
    )
    torch.save(m, out / "pickled_module.pt")
    save_as_cuda(m.state_dict(), out / "legacy_cuda.pt", _use_new_zipfile_serialization=False)
    safetensors(out / "weights.safetensors")
    wrapped = nn.DataParallel(m).state_dict()  # no GPU needed to build the wrapper
    torch.save(wrapped, out / "dp_state_dict.pt")
    torch.save({"state_dict": wrapped, "epoch": 1}, out / "dp_checkpoint.pt")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
