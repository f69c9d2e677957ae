"""Compatibility tables, in one place, each with its source and the date it was last checked.

A new CUDA toolkit or PyTorch release is a one-place update here. Rows marked unverified come from
secondary sources; the checks word their advice cautiously where they rely on them.
"""

from __future__ import annotations

from dataclasses import dataclass

CHECKED = "2026-11"

# --- CUDA toolkit -> minimum Linux x86_64 driver -------------------------------------------------
# Source: NVIDIA CUDA Toolkit release notes, table "CUDA Toolkit and Corresponding Driver Versions".
# Keyed by "major.minor"; the GA minimum (updates raise it slightly; GA is what a wheel needs).
TOOLKIT_MIN_DRIVER: dict[str, str] = {
    "11.8": "520.61.05",
    "12.0": "525.60.13",
    "12.1": "530.30.02",
    "12.2": "535.54.03",
    "12.3": "545.23.06",
    "12.4": "550.54.14",
    "12.5": "555.42.02",
    "12.6": "560.28.03",
    "12.8": "570.26",
    "12.9": "575.51.03",
    "13.0": "580.65.06",
    "13.1": "590.44.01",
    "13.2": "595.45.04",  # unverified (secondary sources)
}

# Source: NVIDIA "CUDA Compatibility" guide, minor-version compatibility: any toolkit of a major
# runs (without PTX JIT of newer PTX) on a driver at or above the major's floor.
MAJOR_FLOOR_DRIVER: dict[int, str] = {11: "450.80.02", 12: "525.60.13", 13: "580.0"}

# --- PyTorch release -> CUDA wheel variants --------------------------------------------------------
# Source: pytorch/test-infra generate_binary_build_matrix.py per release branch, RELEASE.md.
TORCH_CUDA_VARIANTS: dict[str, tuple[str, ...]] = {
    "2.1": ("cu118", "cu121"),
    "2.2": ("cu118", "cu121"),
    "2.3": ("cu118", "cu121"),
    "2.4": ("cu118", "cu121", "cu124"),
    "2.5": ("cu118", "cu121", "cu124"),
    "2.6": ("cu118", "cu124", "cu126"),
    "2.7": ("cu118", "cu126", "cu128"),
    "2.8": ("cu126", "cu128", "cu129"),
    "2.9": ("cu126", "cu128", "cu130"),
    "2.10": ("cu126", "cu128", "cu130"),
    "2.11": ("cu126", "cu128", "cu130"),
    "2.12": ("cu126", "cu130", "cu132"),
    "2.13": ("cu126", "cu130", "cu132"),
    "2.14": ("cu126", "cu130", "cu132"),
}

# Compute capabilities each CUDA variant's wheels run on (cubins, plus PTX for the newest), as
# (lowest, highest). Source: the arch lists in compat-tables.md section 2 (recent releases).
VARIANT_CAPABILITY: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {
    "cu118": ((3, 7), (9, 0)),
    "cu121": ((5, 0), (9, 0)),
    "cu124": ((5, 0), (9, 0)),
    "cu126": ((5, 0), (9, 0)),
    "cu128": ((7, 5), (12, 1)),
    "cu129": ((7, 5), (12, 1)),
    "cu130": ((7, 5), (12, 1)),
    "cu132": ((7, 5), (12, 1)),
}
# Releases whose lists differ from the above: cu128 kept Volta (7.0) until 2.11 dropped it.
RELEASE_VARIANT_MIN_CAPABILITY: dict[tuple[str, str], tuple[int, int]] = {
    ("2.8", "cu128"): (7, 0),
    ("2.9", "cu128"): (7, 0),
    ("2.10", "cu128"): (7, 0),
}

INDEX_URL = "https://download.pytorch.org/whl/{variant}"

# --- torch -> torchvision pairing ---------------------------------------------------------------
# Source: pytorch/vision README compatibility table: torch 2.N pairs with torchvision 0.(N+15);
# torchaudio 2.N pairs with torch 2.N.
TORCHVISION_MINOR_OFFSET = 15

# --- GPU family by compute capability major (for messages) ------------------------------------
FAMILY_BY_CAPABILITY: dict[tuple[int, int], str] = {
    (3, 5): "Kepler",
    (3, 7): "Kepler",
    (5, 0): "Maxwell",
    (5, 2): "Maxwell",
    (5, 3): "Maxwell",
    (6, 0): "Pascal",
    (6, 1): "Pascal",
    (6, 2): "Pascal",
    (7, 0): "Volta",
    (7, 2): "Volta",
    (7, 5): "Turing",
    (8, 0): "Ampere",
    (8, 6): "Ampere",
    (8, 7): "Ampere",
    (8, 9): "Ada",
    (9, 0): "Hopper",
    (10, 0): "Blackwell",
    (10, 3): "Blackwell",
    (11, 0): "Blackwell",
    (12, 0): "Blackwell",
    (12, 1): "Blackwell",
}

# --- PCIe x16 theoretical peak per direction, GB/s ----------------------------------------------
# Source: PCI-SIG generation rates with 128b/130b encoding (Gen3+), 8b/10b for Gen1/2.
PCIE_GBPS_PER_LANE: dict[int, float] = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}


def _padded(v: tuple[int, ...]) -> tuple[int, ...]:
    """Compare '580' with '580.0': pad to three parts."""
    return v + (0,) * (3 - len(v))


def parse_version(text: str | None) -> tuple[int, ...]:
    """'580.65.06' -> (580, 65, 6); tolerant of junk, empty on None."""
    out: list[int] = []
    for part in (text or "").split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def cuda_major_minor(cuda: str | None) -> str | None:
    v = parse_version(cuda)
    return f"{v[0]}.{v[1]}" if len(v) >= 2 else None


def driver_support(driver: str, cuda: str) -> str:
    """How a driver serves a wheel built with CUDA ``cuda``: full | minor_compat | too_old | unknown."""
    mm = cuda_major_minor(cuda)
    d = parse_version(driver)
    if not mm or not d:
        return "unknown"
    d = _padded(d)
    need = TOOLKIT_MIN_DRIVER.get(mm)
    if need and d >= _padded(parse_version(need)):
        return "full"
    floor = MAJOR_FLOOR_DRIVER.get(parse_version(mm)[0])
    if floor and d >= _padded(parse_version(floor)):
        return "minor_compat" if need else "unknown"
    if floor or need:
        return "too_old"
    return "unknown"


def variant_cuda(variant: str) -> str:
    """'cu128' -> '12.8', 'cu130' -> '13.0'."""
    digits = variant[2:]
    return f"{digits[:-1]}.{digits[-1]}"


def torch_minor(version: str | None) -> str | None:
    v = parse_version(version)
    return f"{v[0]}.{v[1]}" if len(v) >= 2 else None


def covers(release: str, variant: str, capability: tuple[int, int]) -> bool:
    """Do the wheels of ``release`` built for ``variant`` run on a device of ``capability``?"""
    if variant not in VARIANT_CAPABILITY:
        return False
    lowest, highest = VARIANT_CAPABILITY[variant]
    lowest = RELEASE_VARIANT_MIN_CAPABILITY.get((release, variant), lowest)
    return lowest <= tuple(capability) <= highest


@dataclass(frozen=True)
class WheelChoice:
    release: str  # "2.13"
    variant: str  # "cu126"
    support: str  # how the driver serves it: full | minor_compat | unknown (no driver seen)


def newest_release() -> str:
    return max(TORCH_CUDA_VARIANTS, key=parse_version)


def _release_order(torch_version: str | None) -> list[str]:
    """This release first, then older ones, newest first; a release missing from the table
    starts at the nearest older row, or, older than the whole table, at its oldest row."""
    rows = sorted(TORCH_CUDA_VARIANTS, key=parse_version, reverse=True)
    current = parse_version(torch_minor(torch_version))
    if not current:
        return rows
    return [r for r in rows if parse_version(r) <= current] or rows[::-1]


def pick_wheel(
    torch_version: str | None,
    driver: str | None,
    capabilities: list[tuple[int, int]] | None = None,
) -> WheelChoice | None:
    """The newest CUDA wheel, of this torch release if possible, that the driver serves (fully
    before minor-version compatibility) and whose arch list covers every given device."""
    for release in _release_order(torch_version):
        variants = TORCH_CUDA_VARIANTS[release]
        for wanted in ("full", "minor_compat") if driver else ("unknown",):
            for variant in reversed(variants):
                if driver and driver_support(driver, variant_cuda(variant)) != wanted:
                    continue
                if all(covers(release, variant, c) for c in capabilities or []):
                    return WheelChoice(release, variant, wanted)
    return None


def public_version(version: str | None) -> str | None:
    """'2.13.0+cu130' -> '2.13.0'."""
    return version.split("+", 1)[0] if version else None


def companion_minor(package: str, torch_release: str) -> str | None:
    """The companion release that pairs with torch ``2.N``: torchvision 0.(N+15), torchaudio 2.N."""
    v = parse_version(torch_release)
    if len(v) < 2 or v[0] != 2:
        return None
    if package == "torchvision":
        return f"0.{v[1] + TORCHVISION_MINOR_OFFSET}"
    if package == "torchaudio":
        return f"{v[0]}.{v[1]}"
    return None


def family(capability: tuple[int, int] | list[int] | None) -> str:
    if not capability:
        return "unknown"
    return FAMILY_BY_CAPABILITY.get((int(capability[0]), int(capability[1])), "unknown")
