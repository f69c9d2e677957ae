"""Installed size of the CUDA parts of a torch install: what a CPU wheel would not carry.

Imported by torch_probe.py in the probe child, so standard library only. Cheap by design:
each nvidia-*/triton wheel's RECORD is short, and torch's own CUDA libraries are found by listing
torch/lib rather than parsing torch's 12,000-line RECORD.
"""

from __future__ import annotations

import os
import re

# torch/lib files that exist only in CUDA builds (the CPU build has libtorch_cpu, libc10, ...).
_TORCH_CUDA_LIB = re.compile(r"cuda|nvrtc|nccl|cudnn|cublas|cufft|cusparse|curand|cupti|nvToolsExt")


def record_size(dist):
    """Sum of the sizes listed in a distribution's RECORD (bytes), or None without one."""
    text = dist.read_text("RECORD")
    if not text:
        return None
    total = 0
    for line in text.splitlines():
        size = line.rpartition(",")[2]
        if size.isdigit():
            total += int(size)
    return total


def torch_cuda_libs_size(torch_location):
    """Bytes of CUDA-only shared libraries inside torch/lib."""
    total = 0
    try:
        with os.scandir(os.path.join(torch_location, "torch", "lib")) as entries:
            for entry in entries:
                if _TORCH_CUDA_LIB.search(entry.name) and entry.is_file():
                    total += entry.stat().st_size
    except OSError:
        return None
    return total


def _name(dist):
    return (dist.metadata.get("Name") or "").lower().replace("_", "-")


def cuda_only_requirements(torch_dist):
    """The nvidia-* wheels and triton that this torch build requires (none for a CPU build)."""
    names = set()
    for req in torch_dist.requires or []:
        m = re.match(r"[A-Za-z0-9._-]+", req)
        name = m.group(0).lower().replace("_", "-") if m else ""
        if name.startswith("nvidia-") or name == "triton":
            names.add(name)
    return names


def cuda_sizes(dists):
    """{name: bytes} for the CUDA-only wheels torch pulled and torch's own CUDA libraries."""
    torch_dist = next((d for d in dists if _name(d) == "torch"), None)
    if torch_dist is None:
        return {}
    wanted = cuda_only_requirements(torch_dist)
    sizes = {}
    for dist in dists:
        name = _name(dist)
        if name in wanted and name not in sizes:
            sizes[name] = record_size(dist)
    if wanted or "+cu" in torch_dist.version:
        location = str(torch_dist.locate_file(""))
        sizes["torch (CUDA libraries)"] = torch_cuda_libs_size(location)
    return sizes
