"""Intel GPUs and the torch builds that use them (XPU): which PCI devices are discrete Intel GPUs,
which torch releases have XPU wheels, and which Intel Extension for PyTorch (IPEX) XPU release
pairs with which torch.

A CPU wheel on a laptop with an Intel iGPU is the normal case, so only a *discrete* Intel GPU
counts as evidence that an XPU build was wanted; integrated GPUs (Alder Lake, Meteor Lake,
Lunar Lake ...) are left out on purpose even where XPU supports them.

Sources (checked 2026-11-26):
- PCI device IDs: the Linux kernel's ``include/drm/intel/pciids.h`` (formerly
  ``i915_pciids.h``): INTEL_DG2_G10/G11/G12_IDS (Arc A-series, Alchemist), INTEL_ATS_M150/M75_IDS
  (Data Center GPU Flex 170/140), INTEL_PVC_IDS (Data Center GPU Max, Ponte Vecchio),
  INTEL_BMG_IDS (Arc B-series, Battlemage; 0xE210/E215/E216 added 2025-01, 0xE211 later,
  0xE220-E222 with the G31 parts in 2025-11 patches to the same list). DG1 (Iris Xe MAX) is left
  out: no XPU wheel or IPEX release supports it.
- XPU wheels: PyTorch "Getting Started on Intel GPU" (docs 2.5 to 2.12): wheels on
  https://download.pytorch.org/whl/xpu from 2.5 for Linux and Windows (torch only on Windows in
  2.5; torchvision/torchaudio Windows wheels from 2.6, pytorch/pytorch#143183); 2.10-2.12 on the
  index (pytorch/pytorch#185608, 2026-05); 2.14 (pytorch/pytorch#192398, 2026-08). 2.13 is
  assumed from its neighbours. The Python versions are assumed to be those of the release's CPU
  wheels (the binary build matrix builds XPU for the same Python list; seen: cp310 for 2.6 on
  Windows, cp312 for 2.5, cp313 for 2.12).
- IPEX: from 2.6.10+xpu IPEX installs over the official XPU torch from download.pytorch.org
  (intel/intel-extension-for-pytorch#786, 2025-02); the installation pages pair 2.6.10+xpu with
  torch 2.6, 2.7.10+xpu with 2.7 and 2.8.10+xpu with 2.8, IPEX itself from
  https://pytorch-extension.intel.com/release-whl/stable/xpu/us/. Development stopped after the
  2.8 release (intel/intel-extension-for-pytorch#867, 2025-10) and the repository was archived
  on 2026-03-30: there is no IPEX for torch 2.9 or later, and torch.xpu works without it.
- The version intel/intel-extension-for-pytorch#244 hit: IPEX 1.11 had no XPU support at all
  (a CPU-only release); GPU builds carry a ``+xpu`` (or, for 1.10.200, ``+gpu``) local tag.
"""

from __future__ import annotations

CHECKED = "2026-11-26"

INTEL = "0x8086"

# PCI device ID (lower case, as sysfs writes it) -> product family.
_FAMILIES: dict[str, tuple[str, ...]] = {
    "Arc A-series (Alchemist, DG2)": (
        *("0x5690", "0x5691", "0x5692", "0x56a0", "0x56a1", "0x56a2", "0x56be", "0x56bf"),  # G10
        *("0x5693", "0x5694", "0x5695", "0x56a5", "0x56a6", "0x56b0", "0x56b1"),  # G11
        *("0x56ba", "0x56bb", "0x56bc", "0x56bd"),  # G11
        *("0x5696", "0x5697", "0x56a3", "0x56a4", "0x56b2", "0x56b3"),  # G12
    ),
    "Data Center GPU Flex (Arctic Sound-M)": ("0x56c0", "0x56c1", "0x56c2"),
    "Data Center GPU Max (Ponte Vecchio)": (
        *("0x0b69", "0x0b6e", "0x0bd4", "0x0bd5", "0x0bd6", "0x0bd7", "0x0bd8"),
        *("0x0bd9", "0x0bda", "0x0bdb", "0x0be0", "0x0be1", "0x0be5"),
    ),
    "Arc B-series (Battlemage)": (
        *("0xe202", "0xe20b", "0xe20c", "0xe20d", "0xe210", "0xe211", "0xe212", "0xe215"),
        *("0xe216", "0xe220", "0xe221", "0xe222"),
    ),
}
DISCRETE: dict[str, str] = {dev: family for family, ids in _FAMILIES.items() for dev in ids}


def discrete_family(vendor: str | None, device: str | None) -> str | None:
    """'Arc A-series (Alchemist, DG2)' for an Arc A770 (0x8086:0x56a0); None for an iGPU."""
    if (vendor or "").lower() != INTEL:
        return None
    return DISCRETE.get((device or "").lower())


XPU_INDEX = "https://download.pytorch.org/whl/xpu"
# The first release with XPU wheels per OS (Windows: with torchvision/torchaudio too).
FIRST_XPU_RELEASE: dict[str, str] = {"Linux": "2.5", "Windows": "2.6"}
# Releases known to have XPU wheels on XPU_INDEX (see the sources above).
XPU_RELEASES: tuple[str, ...] = (
    "2.5", "2.6", "2.7", "2.8", "2.9", "2.10", "2.11", "2.12", "2.13", "2.14",
)  # fmt: skip

IPEX = "intel-extension-for-pytorch"
IPEX_INDEX = "https://pytorch-extension.intel.com/release-whl/stable/xpu/us/"
# torch release -> the IPEX XPU release built for it (over the official XPU wheel).
IPEX_FOR_TORCH: dict[str, str] = {"2.6": "2.6.10+xpu", "2.7": "2.7.10+xpu", "2.8": "2.8.10+xpu"}
IPEX_LAST_TORCH = "2.8"


def ipex_is_xpu_build(version: str | None) -> bool:
    """An IPEX GPU build: '2.1.10+xpu', '1.10.200+gpu'; a CPU build is '2.3.0+cpu' or untagged."""
    tag = (version or "").partition("+")[2].lower()
    return tag in ("xpu", "gpu")
