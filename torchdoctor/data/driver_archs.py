"""Which NVIDIA driver branches support which GPU architectures.

A driver upgrade is a remedy only if the new branch still runs every GPU in the box (issue 25,
"hardware-blind"). Checked 2026-11-24. Sources:
- Fermi: last branch R390 (NVIDIA CUDA/driver support matrix reproduced by wccftech and Tom's
  Hardware, 2021-05).
- Kepler (sm_30..37): R470 is the last branch (NVIDIA CUDA documentation, reported by Phoronix
  2021-05; the same matrix lists "Last Driver Support: R470" for Kepler 3.0 and 3.5).
- Maxwell, Pascal, Volta: "The Release 580 series will be the last to support GPUs based on the
  Maxwell, Pascal, and Volta architectures" (NVIDIA "Unix graphics feature deprecation
  schedule", updated 2025-06/07; reported by Tom's Hardware, Neowin, Phoronix). So R590 and later
  drop them.
- Turing and newer: supported by every branch in this table (no end announced).
CUDA 13.x toolkits need a driver >= 580 (``compat.TOOLKIT_MIN_DRIVER``): a Maxwell/Pascal/Volta
GPU can still use R580, the last branch that both runs CUDA 13.0 and keeps them.
"""

from __future__ import annotations

from .compat import FAMILY_BY_CAPABILITY, parse_version

CHECKED = "2026-11-24"

# family -> last driver branch that supports it (None: still supported)
LAST_BRANCH: dict[str, int | None] = {
    "Fermi": 390,
    "Kepler": 470,
    "Maxwell": 580,
    "Pascal": 580,
    "Volta": 580,
    "Turing": None,
    "Ampere": None,
    "Ada": None,
    "Hopper": None,
    "Blackwell": None,
}
SOURCES: dict[str, str] = {
    "Fermi": "NVIDIA support matrix (wccftech 2021-05): last driver R390",
    "Kepler": "NVIDIA CUDA docs via Phoronix 2021-05: R470 last branch for Kepler",
    "Maxwell": "NVIDIA Unix deprecation schedule 2025: R580 last for Maxwell/Pascal/Volta",
    "Pascal": "NVIDIA Unix deprecation schedule 2025: R580 last for Maxwell/Pascal/Volta",
    "Volta": "NVIDIA Unix deprecation schedule 2025: R580 last for Maxwell/Pascal/Volta",
}


def family_of(capability: tuple[int, int] | list[int] | None) -> str | None:
    if not capability or len(capability) < 2:
        return None
    major, minor = int(capability[0]), int(capability[1])
    if major == 2:
        return "Fermi"
    return FAMILY_BY_CAPABILITY.get((major, minor))


def branch(driver: str | None) -> int | None:
    """'580.65.06' -> 580."""
    v = parse_version(driver)
    return v[0] if v else None


def supports(driver_branch: int, capability: tuple[int, int] | list[int] | None) -> bool | None:
    """Does driver branch ``driver_branch`` (e.g. 590) run a GPU of ``capability``? None when
    the family is unknown."""
    fam = family_of(capability)
    if fam is None or fam not in LAST_BRANCH:
        return None
    last = LAST_BRANCH[fam]
    return last is None or driver_branch <= last


def last_branch_for(capabilities: list[tuple[int, int]]) -> int | None:
    """The newest driver branch that still runs every given GPU (None: no limit known)."""
    limits = [LAST_BRANCH.get(family_of(c) or "") for c in capabilities]
    known = [b for b in limits if b is not None]
    return min(known) if known else None


def dropped_by(driver_branch: int, capabilities: list[tuple[int, int]]) -> list[int]:
    """Indices of the GPUs that driver branch ``driver_branch`` no longer runs."""
    return [i for i, c in enumerate(capabilities) if supports(driver_branch, c) is False]
