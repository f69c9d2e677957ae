"""Check modules. Each has ID, TITLE and a pure ``check(facts, ctx) -> Verdict``.

``NEEDS`` (optional) names the fact paths a check judges. Facts from a pasted report (a
collect_env text) list what they carry; a check needing more, or declaring nothing, is skipped
there as "not in the report" (engine.run_check), so no check judges facts a report lacks.

The list below is the registry: explicit, ordered (fast, basic checks first), no import magic.
"""

from __future__ import annotations

from types import ModuleType

from . import (
    container,
    cuda_available,
    cuda_devices,
    cuda_driver,
    env,
    extensions,
    host,
    mps,
    platform,
    rocm,
    shadowing,
    smoke_compute,
    smoke_cuda_memory,
    smoke_transfer,
    torch_build,
    torch_install,
    torch_libs,
    xpu,
)

ALL: list[ModuleType] = [
    platform,
    torch_install,
    shadowing,
    torch_build,
    cuda_driver,
    cuda_available,
    cuda_devices,
    mps,
    rocm,
    xpu,
    host,
    container,
    torch_libs,
    env,
    extensions,
    # Slow checks last: they judge what the smoke phase of the probe measured.
    smoke_compute,
    smoke_transfer,
    smoke_cuda_memory,
]


def by_id() -> dict[str, ModuleType]:
    return {m.ID: m for m in ALL}
