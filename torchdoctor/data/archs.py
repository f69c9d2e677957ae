"""Does a wheel's compiled arch list cover a device? (CUDA's cubin and PTX rules.)

- a cubin ``sm_XY`` runs on a device of the same major X with minor >= Y;
- ``sm_XYa`` (arch-specific features) runs only on exactly X.Y;
- PTX ``compute_XY`` is JIT-compiled by the driver for any device of capability >= X.Y.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ARCH = re.compile(r"^(sm|compute)_(\d+?)(\d)([af]?)$")


@dataclass(frozen=True)
class Arch:
    kind: str  # "sm" (cubin) or "compute" (PTX)
    major: int
    minor: int
    suffix: str = ""

    def runs_on(self, cap: tuple[int, int]) -> bool:
        if self.kind == "compute":
            return cap >= (self.major, self.minor)
        if self.suffix == "a":
            return cap == (self.major, self.minor)
        return cap[0] == self.major and cap[1] >= self.minor


def parse(flag: str) -> Arch | None:
    m = _ARCH.match(flag.strip())
    if not m:
        return None
    return Arch(m.group(1), int(m.group(2)), int(m.group(3)), m.group(4))


def coverage(capability: tuple[int, int], arch_list: list[str]) -> str:
    """'cubin' (native code), 'ptx' (driver JIT only), or 'none'."""
    archs = [a for a in (parse(f) for f in arch_list) if a]
    if any(a.kind == "sm" and a.runs_on(capability) for a in archs):
        return "cubin"
    if any(a.kind == "compute" and a.runs_on(capability) for a in archs):
        return "ptx"
    return "none"


def min_capability(arch_list: list[str]) -> tuple[int, int] | None:
    caps = [(a.major, a.minor) for a in (parse(f) for f in arch_list) if a]
    return min(caps) if caps else None


def fmt(capability: tuple[int, int] | list[int]) -> str:
    return f"{capability[0]}.{capability[1]}"


# The first CUDA release whose nvcc compiles for a compute capability (before it: "nvcc fatal :
# Unsupported gpu architecture 'compute_86'"). Checked 2026-11-26 against the nvcc GPU feature
# lists of NVIDIA's CUDA documentation and release notes (9.0: Volta; 10.0: Turing; 11.0: A100;
# 11.1: sm_86, deepspeedai/DeepSpeed#607, ClementPinard/Pytorch-Correlation-extension#54; 11.4:
# Orin's sm_87; 11.8: Ada's sm_89 and Hopper's sm_90; 12.8: Blackwell's sm_100 and sm_120; 12.9:
# sm_103 and sm_121). Capabilities not listed are not judged.
NVCC_FIRST: dict[tuple[int, int], str] = {
    (7, 0): "9.0",
    (7, 5): "10.0",
    (8, 0): "11.0",
    (8, 6): "11.1",
    (8, 7): "11.4",
    (8, 9): "11.8",
    (9, 0): "11.8",
    (10, 0): "12.8",
    (10, 3): "12.9",
    (12, 0): "12.8",
    (12, 1): "12.9",
}
