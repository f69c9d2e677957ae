"""Save small checkpoints from real CUDA tensors, as fixtures for what reads them without a GPU.

    python scripts/cuda_checkpoints.py DIR      (on a machine with an NVIDIA GPU)

tests/ckpt_factory.py makes CUDA-tagged files on any machine by registering a location tagger;
these are the real thing, to check that `torchdoctor inspect` and the scan's reading of committed
checkpoints (torchdoctor/scan/committed.py) see what torch.save wrote on a GPU:

- state_dict_cuda.pt         a state_dict of a model moved to cuda:0 (zip format)
- state_dict_cuda_legacy.pt  the same in the pre-1.6 format (_use_new_zipfile_serialization=False)
- mixed_cuda_cpu.pt          {"gpu": a cuda:0 tensor, "cpu": a CPU tensor}
- checkpoint_cuda.pt         {"model", "optimizer" (after one step on the GPU), "epoch"}
- module_cuda.pt             torch.save(model): a pickled nn.Module, which weights_only refuses
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3), nn.Linear(3, 2)).cuda()
    state = model.state_dict()
    torch.save(state, out / "state_dict_cuda.pt")
    torch.save(state, out / "state_dict_cuda_legacy.pt", _use_new_zipfile_serialization=False)
    torch.save(
        {"gpu": torch.arange(3.0, device="cuda"), "cpu": torch.ones(2)}, out / "mixed_cuda_cpu.pt"
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(5, 4, device="cuda")).sum().backward()
    opt.step()
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}
    torch.save(ckpt, out / "checkpoint_cuda.pt")
    torch.save(model, out / "module_cuda.pt")
    print(torch.__version__, torch.cuda.get_device_name(0), sorted(p.name for p in out.iterdir()))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
