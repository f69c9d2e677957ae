"""Check modules. Each has ID, TITLE and a pure ``check(facts, ctx) -> Verdict``.

The list below is the registry: explicit, ordered (fast, basic checks first), no import magic.
"""

from __future__ import annotations

from types import ModuleType

from . import (
    container,
    cuda_available,
    cuda_devices,
    cuda_driver,
    host,
    mps,
    platform,
    torch_build,
    torch_install,
)

ALL: list[ModuleType] = [
    platform,
    torch_install,
    torch_build,
    cuda_driver,
    cuda_available,
    cuda_devices,
    mps,
    host,
    container,
]


def by_id() -> dict[str, ModuleType]:
    return {m.ID: m for m in ALL}
