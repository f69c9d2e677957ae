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
