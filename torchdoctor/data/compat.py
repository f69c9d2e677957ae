"""Compatibility tables, in one place, each with its source and the date it was last checked.

A new CUDA toolkit or PyTorch release is a one-place update here; ``scripts/check_compat.py``
checks the tables against PyPI's index (versions, wheel tags) and ``tests/test_compat_data.py``
fails when one table contradicts another. Figures marked ``unverified`` come from secondary
sources; the checks word their advice cautiously where they rely on them.

Sources (checked 2026-11):
- PyPI simple index (PEP 691 JSON) for torch, torchvision, torchaudio, torchtext, triton,
  xformers: which versions exist, the wheels' Python and manylinux tags (scripts/check_compat.py).
- The torch 2.14.1 wheel on PyPI, read locally: ``torch/version.py`` says cuda 13.0, its
  Requires-Dist pins ``triton~=3.8.0``; ``cuobjdump --list-elf/--list-ptx`` on its
  libtorch_cuda.so: cubins for sm_75 80 86 90 100 120 (a few kernels for 89/90a/100a/103/120a/
  121a), no PTX at all.
- Arch lists of older pip wheels: the lists torch itself prints in "… with CUDA capability sm_XX
  is not compatible with the current PyTorch installation. The current PyTorch install supports
  CUDA capabilities …" in public issue reports (e.g. RTX 3090 on 1.x cu102, H100/RTX 4090 on
  1.13 cu117, RTX 5090 on 2.6 cu124/cu126, GTX 10xx on 2.7 cu128); the per-package table of
  moi90/pytorch_compute_capabilities (conda builds, which add sm_35/sm_61) for cross-checks;
  pytorch ``.ci/manywheel/build_cuda.sh`` TORCH_CUDA_ARCH_LIST per CUDA version.
- CUDA variants per release: pytorch RELEASE.md "Release Compatibility Matrix" and
  pytorch.org "previous versions" install commands; test-infra generate_binary_build_matrix.py.
- Minimum drivers: NVIDIA CUDA Toolkit release notes, table "CUDA Toolkit and Corresponding
  Driver Versions" (Linux x86_64, GA releases); minor-version compatibility floors from NVIDIA's
  "CUDA Compatibility" guide (CUDA 10.x has none: each toolkit needs its own minimum).
- Companion pairs: pytorch/vision and pytorch/audio README compatibility tables; exact versions
  cross-checked against PyPI by scripts/check_compat.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from . import archs

CHECKED = "2026-11-23"

# --- CUDA toolkit -> minimum Linux x86_64 driver -------------------------------------------------
# Keyed by "major.minor"; the GA minimum (updates raise it slightly; GA is what a wheel needs).
TOOLKIT_MIN_DRIVER: dict[str, str] = {
    # CUDA 8.0-9.2: NVIDIA's CUDA Toolkit Release Notes, "CUDA Toolkit and Corresponding Driver
    # Versions" (8.0.61 GA2, 9.0.76, 9.1.85, 9.2.88), checked 2026-11-26. For 9.1 the earlier
    # editions say 387.26, later ones 390.46: 387.26 is the driver 9.1.85 shipped with, and
    # pytorch/pytorch#10971's working torch 0.4 (CUDA 9.1) ran on it. torch 0.3-1.1 used these.
    "8.0": "375.26",
    "9.0": "384.81",
    "9.1": "387.26",
    "9.2": "396.26",
    "10.0": "410.48",
    "10.1": "418.39",
    "10.2": "440.33",
    "11.0": "450.51.05",
    "11.1": "455.23",
    "11.2": "460.27.03",
    "11.3": "465.19.01",
    "11.4": "470.42.01",
    "11.5": "495.29.05",
    "11.6": "510.39.01",
    "11.7": "515.43.04",
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

# Minor-version compatibility: any toolkit of a major runs (without PTX JIT of newer PTX) on a
# driver at or above the major's floor. CUDA 10.x has no such floor.
MAJOR_FLOOR_DRIVER: dict[int, str] = {11: "450.80.02", 12: "525.60.13", 13: "580.0"}

# --- GPU families by compute capability (for messages) ------------------------------------------
FAMILY_BY_CAPABILITY: dict[tuple[int, int], str] = {
    (1, 0): "Tesla", (1, 1): "Tesla", (1, 2): "Tesla", (1, 3): "Tesla",
    (2, 0): "Fermi", (2, 1): "Fermi",
    (3, 0): "Kepler", (3, 2): "Kepler", (3, 5): "Kepler", (3, 7): "Kepler",
    (5, 0): "Maxwell", (5, 2): "Maxwell", (5, 3): "Maxwell",
    (6, 0): "Pascal", (6, 1): "Pascal", (6, 2): "Pascal",
    (7, 0): "Volta", (7, 2): "Volta",
    (7, 5): "Turing",
    (8, 0): "Ampere", (8, 6): "Ampere", (8, 7): "Ampere",
    (8, 9): "Ada",
    (9, 0): "Hopper",
    (10, 0): "Blackwell", (10, 3): "Blackwell", (11, 0): "Blackwell", (12, 0): "Blackwell",
    (12, 1): "Blackwell",
}  # fmt: skip

# --- Arch lists of the pip wheels (Linux x86_64), as torch._C._cuda_getArchFlags() lists them ----
_CU10 = ("sm_37", "sm_50", "sm_60", "sm_70")
_CU11 = (*_CU10, "sm_75", "sm_80", "sm_86")
_CU118 = (*_CU11, "sm_90")
_CU12 = ("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")
_BLACKWELL = ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120")
_BLACKWELL_PTX = (*_BLACKWELL, "compute_120")
_VOLTA_BLACKWELL = ("sm_70", *_BLACKWELL)


@dataclass(frozen=True)
class Release:
    """One torch minor release's wheels and the companions built against it."""

    latest: str  # newest patch on PyPI
    python: tuple[str, str]  # lowest and highest CPython with a Linux x86_64 wheel on PyPI
    manylinux: str  # the PyPI wheel's platform tag (glibc floor: see MANYLINUX_GLIBC)
    pypi: str  # the variant PyPI's Linux x86_64 wheel is built for
    variants: dict[str, tuple[str, ...]]  # wheel index -> arch list (sm_XX cubins, compute_XX PTX)
    torchvision: str | None  # companion minor releases built against this torch
    torchaudio: str | None
    torchtext: str | None = None
    triton: str | None = None  # torch's own Requires-Dist pin decides when it is installed
    unverified: tuple[str, ...] = field(default=())  # which fields rest on secondary sources


def _rel(
    latest: str,
    python: tuple[str, str],
    pypi: str,
    variants: dict[str, tuple[str, ...]],
    vision: str | None,
    audio: str | None,
    text: str | None = None,
    triton: str | None = None,
    unverified: tuple[str, ...] = (),
) -> Release:
    manylinux = (
        "manylinux_2_28" if tuple(map(int, latest.split(".")[:2])) >= (2, 7) else "manylinux1"
    )
    return Release(
        latest, python, manylinux, pypi, variants, vision, audio, text, triton, unverified
    )


RELEASES: dict[str, Release] = {
    "1.8": _rel("1.8.1", ("3.6", "3.9"), "cu102", {"cu101": _CU10, "cu102": _CU10, "cu111": _CU11},
                "0.9", "0.8", "0.9"),
    "1.9": _rel("1.9.1", ("3.6", "3.9"), "cu102", {"cu102": _CU10, "cu111": _CU11},
                "0.10", "0.9", "0.10"),
    "1.10": _rel("1.10.2", ("3.6", "3.9"), "cu102",
                 {"cu102": _CU10, "cu111": _CU11, "cu113": _CU11}, "0.11", "0.10", "0.11"),
    "1.11": _rel("1.11.0", ("3.7", "3.10"), "cu102",
                 {"cu102": _CU10, "cu113": _CU11, "cu115": _CU11}, "0.12", "0.11", "0.12"),
    "1.12": _rel("1.12.1", ("3.7", "3.10"), "cu102",
                 {"cu102": _CU10, "cu113": _CU11, "cu116": _CU11}, "0.13", "0.12", "0.13"),
    "1.13": _rel("1.13.1", ("3.7", "3.11"), "cu117", {"cu116": _CU11, "cu117": _CU11},
                 "0.14", "0.13", "0.14"),
    "2.0": _rel("2.0.1", ("3.8", "3.11"), "cu117", {"cu117": _CU11, "cu118": _CU118},
                "0.15", "2.0", "0.15", "2.0"),
    "2.1": _rel("2.1.2", ("3.8", "3.11"), "cu121", {"cu118": _CU118, "cu121": _CU12},
                "0.16", "2.1", "0.16", "2.1"),
    "2.2": _rel("2.2.2", ("3.8", "3.12"), "cu121", {"cu118": _CU118, "cu121": _CU12},
                "0.17", "2.2", "0.17", "2.2"),
    "2.3": _rel("2.3.1", ("3.8", "3.12"), "cu121", {"cu118": _CU118, "cu121": _CU12},
                "0.18", "2.3", "0.18", "2.3"),
    "2.4": _rel("2.4.1", ("3.8", "3.12"), "cu121",
                {"cu118": _CU118, "cu121": _CU12, "cu124": _CU12}, "0.19", "2.4", None, "3.0"),
    "2.5": _rel("2.5.1", ("3.9", "3.13"), "cu124",
                {"cu118": _CU118, "cu121": _CU12, "cu124": _CU12}, "0.20", "2.5", None, "3.1"),
    "2.6": _rel("2.6.0", ("3.9", "3.13"), "cu124",
                {"cu118": _CU118, "cu124": _CU12, "cu126": _CU12}, "0.21", "2.6", None, "3.2"),
    # 2.7: the first release with Blackwell (sm_100, sm_120), in its cu128 wheels only.
    "2.7": _rel("2.7.1", ("3.9", "3.13"), "cu126",
                {"cu118": _CU118, "cu126": _CU12, "cu128": _BLACKWELL_PTX}, "0.22", "2.7", None,
                "3.3"),
    "2.8": _rel("2.8.0", ("3.9", "3.13"), "cu128",
                {"cu126": _CU12, "cu128": _VOLTA_BLACKWELL, "cu129": (*_VOLTA_BLACKWELL, "compute_120")},
                "0.23", "2.8", None, "3.4", unverified=("variants.cu128", "variants.cu129")),
    "2.9": _rel("2.9.1", ("3.10", "3.14"), "cu128",
                {"cu126": _CU12, "cu128": _VOLTA_BLACKWELL, "cu130": _BLACKWELL_PTX}, "0.24", "2.9",
                None, "3.5", unverified=("variants.cu128", "variants.cu130")),
    "2.10": _rel("2.10.0", ("3.10", "3.14"), "cu128",
                 {"cu126": _CU12, "cu128": _VOLTA_BLACKWELL, "cu130": _BLACKWELL_PTX}, "0.25",
                 "2.10", None, "3.6", unverified=("variants", "triton")),
    # 2.11: cu128 measured without Volta (compat-tables.md). From 2.11 the CUDA 13 lists are the
    # cu130 list measured on 2.14.1 (no PTX); 2.11-2.13 and cu132 are assumed to match it.
    "2.11": _rel("2.11.0", ("3.10", "3.14"), "cu130",
                 {"cu126": _CU12, "cu128": _BLACKWELL, "cu130": _BLACKWELL}, "0.26", "2.11",
                 unverified=("pypi",)),
    # No torchaudio release on PyPI pairs with 2.12 and later (checked 2026-11).
    "2.12": _rel("2.12.1", ("3.10", "3.14"), "cu130",
                 {"cu126": _CU12, "cu130": _BLACKWELL, "cu132": _BLACKWELL}, "0.27", None,
                 unverified=("variants", "pypi")),
    "2.13": _rel("2.13.0", ("3.10", "3.14"), "cu130",
                 {"cu126": _CU12, "cu130": _BLACKWELL, "cu132": _BLACKWELL}, "0.28", None,
                 unverified=("variants",)),
    "2.14": _rel("2.14.1", ("3.10", "3.14"), "cu130",
                 {"cu126": _CU12, "cu130": _BLACKWELL, "cu132": _BLACKWELL}, "0.29", None,
                 None, "3.8", unverified=("variants.cu126", "variants.cu132")),
    # 2.15: no torchvision on PyPI yet; cu126 dropped per the proposal pytorch#190385 (unverified),
    # so Maxwell/Pascal/Volta advice stops at 2.14.
    "2.15": _rel("2.15.0", ("3.11", "3.15"), "cu130",
                 {"cu130": _BLACKWELL, "cu132": _BLACKWELL}, None, None,
                 unverified=("variants", "pypi")),
}  # fmt: skip

# Companion versions that break the "same patch number" rule (torch X.Y.Z -> companion A.B.Z).
PATCH_EXCEPTIONS: dict[str, dict[str, str]] = {
    "torchvision": {"1.10.0": "0.11.1", "1.10.1": "0.11.2", "1.10.2": "0.11.3",
                    "2.0.0": "0.15.1", "2.0.1": "0.15.2"},
    "torchaudio": {"2.0.0": "2.0.1", "2.0.1": "2.0.2"},
    "torchtext": {"2.0.0": "0.15.1", "2.0.1": "0.15.2", "2.3.1": "0.18.0"},
}  # fmt: skip
COMPANIONS = ("torchvision", "torchaudio", "torchtext", "triton", "xformers")

# glibc a wheel's platform tag needs. PyTorch's manylinux1-tagged wheels were built on CentOS 7
# images (glibc 2.17); 2.7 moved to manylinux_2_28 (AlmaLinux 8).
MANYLINUX_GLIBC: dict[str, tuple[int, int]] = {"manylinux1": (2, 17), "manylinux_2_28": (2, 28)}

INDEX_URL = "https://download.pytorch.org/whl/{variant}"
# ROCm wheel indexes per release, oldest first (the newest is the default on pytorch.org's
# selector). Source: pytorch/test-infra generate_binary_build_matrix.py per release branch, as
# summarised in the project's knowledge notes (compat-tables.md §2, 2026-11); unverified against
# the index itself. Releases not listed here get no ROCm command, only the selector's page.
ROCM_VARIANTS: dict[str, tuple[str, ...]] = {
    "2.8": ("rocm6.3", "rocm6.4"),
    "2.9": ("rocm6.3", "rocm6.4"),
    "2.10": ("rocm7.0", "rocm7.1"),
    "2.11": ("rocm7.1", "rocm7.2"),
    "2.12": ("rocm7.1", "rocm7.2"),
    "2.13": ("rocm7.1", "rocm7.2"),
}
# Releases before 1.11 are found through the flat page, not per-variant indexes.
FIND_LINKS_URL = "https://download.pytorch.org/whl/torch_stable.html"

# Derived views, kept for callers that want one table.
TORCH_CUDA_VARIANTS: dict[str, tuple[str, ...]] = {
    minor: tuple(r.variants) for minor, r in RELEASES.items()
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


def min_driver(variant: str) -> str | None:
    """The driver a variant's wheels need for full support ('cu128' -> '570.26')."""
    return TOOLKIT_MIN_DRIVER.get(variant_cuda(variant)) if variant.startswith("cu") else None


def variant_cuda(variant: str) -> str:
    """'cu128' -> '12.8', 'cu130' -> '13.0'."""
    digits = variant[2:]
    return f"{digits[:-1]}.{digits[-1]}"


def torch_minor(version: str | None) -> str | None:
    v = parse_version(version)
    return f"{v[0]}.{v[1]}" if len(v) >= 2 else None


def public_version(version: str | None) -> str | None:
    """'2.13.0+cu130' -> '2.13.0'."""
    return version.split("+", 1)[0] if version else None


@cache  # asked once per scanned folder's project
def first_release_for_python(python: tuple[int, int]) -> tuple[int, int] | None:
    """The first torch minor release with a PyPI wheel for this CPython (Release.python), or
    None for a CPython newer than every release here: no floor can be told."""
    fits = [
        tuple(map(int, minor.split(".")))
        for minor, row in RELEASES.items()
        if parse_version(row.python[1])[:2] >= python
    ]
    return min(fits) if fits else None  # type: ignore[return-value]


def release(version: str | None) -> Release | None:
    """The table row of a torch version ('2.7.1+cu128' -> RELEASES['2.7'])."""
    return RELEASES.get(torch_minor(version) or "")


def arch_list(minor: str, variant: str) -> tuple[str, ...]:
    row = RELEASES.get(minor)
    return row.variants.get(variant, ()) if row else ()


def covers(minor: str, variant: str, capability: tuple[int, int]) -> bool:
    """Do the wheels of release ``minor`` built for ``variant`` run on a device of ``capability``
    (native code or PTX the driver can JIT)?"""
    return archs.coverage(tuple(capability), list(arch_list(minor, variant))) != "none"


def family(capability: tuple[int, int] | list[int] | None) -> str:
    if not capability:
        return "unknown"
    return FAMILY_BY_CAPABILITY.get((int(capability[0]), int(capability[1])), "unknown")


@dataclass(frozen=True)
class WheelChoice:
    release: str  # "2.13"
    variant: str  # "cu126"
    support: str  # how the driver serves it: full | minor_compat | unknown (no driver judged)


# The last torch release with Intel macOS (x86_64) wheels (compat-tables.md; pytorch/pytorch#127870,
# #161614): newer releases do not install on an Intel Mac.
INTEL_MAC_RELEASE = "2.2"


def newest_release(python: str | None = None) -> str:
    """The newest release in the tables, or the newest with a wheel for ``python``."""
    fits = [m for m in RELEASES if _python_fits(m, python)] or list(RELEASES)
    return max(fits, key=parse_version)


def release_takes_python(minor: str, python: str | None) -> bool | None:
    """Whether torch ``minor`` published a wheel for ``python`` (None: not in the tables)."""
    return _python_fits(minor, python) if minor in RELEASES and python else None


def _python_fits(minor: str, python: str | None) -> bool:
    py = parse_version(python)[:2]
    if len(py) < 2:
        return True
    lo, hi = (parse_version(v) for v in RELEASES[minor].python)
    return lo <= py <= hi


def _release_order(torch_version: str | None) -> list[str]:
    """The smallest move first: this release, then older ones (newest first: the fix for an old
    driver or an old GPU), then newer ones (oldest first: the fix for a GPU newer than the
    wheel). A release missing from the table starts at the nearest older row."""
    rows = sorted(RELEASES, key=parse_version, reverse=True)
    current = parse_version(torch_minor(torch_version))
    if not current:
        return rows
    older = [r for r in rows if parse_version(r) <= current]
    newer = [r for r in rows if parse_version(r) > current][::-1]
    return older + newer


def pick_wheel(
    torch_version: str | None,
    driver: str | None,
    capabilities: list[tuple[int, int]] | None = None,
    python: str | None = None,
) -> WheelChoice | None:
    """The smallest change that works: a CUDA wheel, of this torch release if possible, that the
    driver serves (fully before minor-version compatibility), whose arch list covers every given
    device and that publishes a wheel for ``python``. ``driver=None`` ignores the driver (what to
    install after upgrading it)."""
    for minor in _release_order(torch_version):
        if not _python_fits(minor, python):
            continue
        variants = RELEASES[minor].variants
        for wanted in ("full", "minor_compat") if driver else ("unknown",):
            for variant in reversed(variants):
                if driver and driver_support(driver, variant_cuda(variant)) != wanted:
                    continue
                if all(covers(minor, variant, c) for c in capabilities or []):
                    return WheelChoice(minor, variant, wanted)
    return None


def newest_supporting(capability: tuple[int, int]) -> WheelChoice | None:
    """The newest release and index whose wheels still run on ``capability`` (dropped GPUs)."""
    for minor in sorted(RELEASES, key=parse_version, reverse=True):
        for variant in reversed(RELEASES[minor].variants):
            if covers(minor, variant, capability):
                return WheelChoice(minor, variant, "unknown")
    return None


def newest_for_glibc(glibc: tuple[int, int]) -> str | None:
    """The newest release whose Linux wheels install on this glibc."""
    fits = [m for m, r in RELEASES.items() if MANYLINUX_GLIBC[r.manylinux] <= tuple(glibc)]
    return max(fits, key=parse_version) if fits else None


def companion_minor(package: str, torch_release: str) -> str | None:
    """The companion release built against torch ``torch_release`` ('2.7' -> torchvision 0.22)."""
    row = RELEASES.get(torch_minor(torch_release) or "")
    return getattr(row, package, None) if row and package in COMPANIONS else None


def companion_version(package: str, torch_version: str | None) -> str | None:
    """The exact companion version for an exact torch version ('2.7.1' -> torchvision '0.22.1');
    None where the tables cannot say (triton and xformers follow their own pins)."""
    public = public_version(torch_version)
    if not public or package not in PATCH_EXCEPTIONS:
        return None
    if public in PATCH_EXCEPTIONS[package]:
        return PATCH_EXCEPTIONS[package][public]
    minor = companion_minor(package, public)
    v = parse_version(public)
    return f"{minor}.{v[2]}" if minor and len(v) >= 3 else None


def torch_for_companion(package: str, version: str | None) -> str | None:
    """Which torch minor a companion version was built for ('torchaudio 2.1.0' -> '2.1')."""
    minor = torch_minor(public_version(version))
    for torch_minor_, row in RELEASES.items():
        if getattr(row, package, None) == minor:
            return torch_minor_
    return None


def latest_patch(minor: str) -> str:
    row = RELEASES.get(minor)
    return row.latest if row else f"{minor}.0"


def index_args(minor: str, variant: str) -> tuple[str, bool]:
    """(pip index options, whether requirements need the +variant local tag) for a release's
    wheels: per-variant indexes from 1.11 (local tags until 1.13), the flat page before that."""
    v = parse_version(minor)
    if v < (1, 11):
        return f"-f {FIND_LINKS_URL}", True
    if v < (1, 13):
        return f"--extra-index-url {INDEX_URL.format(variant=variant)}", True
    return f"--index-url {INDEX_URL.format(variant=variant)}", False


def contradictions(releases: dict[str, Release] | None = None) -> list[str]:
    """Entries of the tables that contradict each other (tests/test_compat_data.py runs this)."""
    releases = RELEASES if releases is None else releases
    out: list[str] = []
    previous: dict[str, tuple[int, ...]] = {}
    for minor in sorted(releases, key=parse_version):
        row = releases[minor]
        if torch_minor(row.latest) != minor:
            out.append(f"torch {minor}: latest patch {row.latest} is another release")
        if not row.variants:
            out.append(f"torch {minor}: no CUDA variant")
        if row.pypi not in row.variants:
            out.append(f"torch {minor}: PyPI's variant {row.pypi} is not among its variants")
        if row.manylinux not in MANYLINUX_GLIBC:
            out.append(f"torch {minor}: unknown platform tag {row.manylinux}")
        if parse_version(row.python[0]) > parse_version(row.python[1]):
            out.append(f"torch {minor}: Python range {row.python} is empty")
        for variant, flags in row.variants.items():
            if not flags:
                out.append(f"torch {minor} {variant}: companions listed but no arch list")
            bad = [f for f in flags if archs.parse(f) is None]
            if bad:
                out.append(f"torch {minor} {variant}: unreadable arch flags {bad}")
            if not min_driver(variant):
                out.append(
                    f"torch {minor} {variant}: CUDA {variant_cuda(variant)} has no driver minimum"
                )
        for pkg in ("torchvision", "torchaudio", "torchtext", "triton"):
            pair = getattr(row, pkg)
            if pair is None:
                continue
            v = parse_version(pair)
            if pkg in previous and v <= previous[pkg]:
                out.append(f"torch {minor}: {pkg} {pair} is not newer than the previous release's")
            previous[pkg] = v
        for name in row.unverified:
            if name.split(".")[0] not in Release.__dataclass_fields__:
                out.append(f"torch {minor}: unverified names no field: {name}")
    for mm, need in TOOLKIT_MIN_DRIVER.items():
        # x.0 may predate its major's compatibility floor (11.0 GA shipped before 450.80.02).
        major, minor_ = parse_version(mm)[:2]
        floor = MAJOR_FLOOR_DRIVER.get(major) if minor_ else None
        if floor and _padded(parse_version(need)) < _padded(parse_version(floor)):
            out.append(f"CUDA {mm}: minimum driver {need} is below its major's floor {floor}")
    return out
