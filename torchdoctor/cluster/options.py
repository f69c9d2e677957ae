"""What ``torchdoctor dist`` was asked to do on every rank (parsed once, by ``command``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..check.pipeline import CheckOptions
from . import fleet


@dataclass
class DistOptions:
    backend: str = "auto"  # auto | nccl | gloo
    collective_timeout_s: float = 60.0
    checks: bool = True
    # The node checks, run by local rank 0 of each host exactly as `check` runs them; their
    # --fail-on and --select/--ignore also judge the fleet findings.
    node: CheckOptions = field(default_factory=CheckOptions)
    measure_bandwidth: bool = True
    sizes: list[int] | None = None
    iters: int | None = None
    slow_ratio: float = fleet.SLOW_RATIO
    fmt: str = "text"
    verbose: bool = False
    output: str | None = None
    color: bool = False
