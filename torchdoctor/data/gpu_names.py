"""GPU product names -> what a wheel must be built for: NVIDIA compute capability, AMD gfx target,
Intel XPU architecture. Reports name GPUs (collect_env prints `nvidia-smi -L`; NVML on an old
driver cannot say the capability), so the name is often the only way to judge a GPU.

A name no entry matches gets None: never a guess. Names are matched as `nvidia-smi` and
collect_env print them: with or without the "NVIDIA " brand, "GeForce"/"Quadro"/"Tesla" prefixes,
"Ti"/"SUPER"/"D"/"Laptop GPU"/"Max-Q"/"Mobile" suffixes, memory and form-factor suffixes
("-SXM4-80GB", " 80GB HBM3", "-PCIE-32GB", " NVL") and MIG slices ("... MIG 2g.10gb").

Sources (facts only, written as our own table):
- NVIDIA, "CUDA GPUs - Compute Capability", https://developer.nvidia.com/cuda-gpus (its
  GeForce/TITAN, RTX professional/Quadro, data-centre/Tesla and Jetson lists), checked 2026-11;
  NVIDIA CUDA C++ Programming Guide, "Compute Capabilities" (Thor is sm_110 from CUDA 13).
- AMD, ROCm "GPU hardware specifications" (LLVM target per product),
  https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html, checked 2026-11.
- Intel, "Intel Arc / Data Center GPU" device lists of intel/compute-runtime and the PyTorch XPU
  "Getting Started on Intel GPU" supported hardware page, checked 2026-11.
Ambiguous names (GeForce GTX TITAN X was sold as Maxwell, and the Pascal one was shipped under a
near-identical name by early drivers) are left out on purpose.
"""

from __future__ import annotations

import functools
import re

CHECKED = "2026-11"

# Capability -> the model stems that have it. A stem (with variant suffixes) must be the whole
# normalised name (brand, line and packaging words dropped, see _normalise), so "A100" never
# matches "A10" and "GTX TITAN" never matches "GTX TITAN X".
_NVIDIA: dict[tuple[int, int], tuple[str, ...]] = {
    (1, 0): ("8800 GTX", "8800 Ultra", "Tesla C870", "Tesla D870"),
    (1, 1): (
        "8400 GS",
        "8500 GT",
        "8600 GT",
        "8600 GTS",
        "9400 GT",
        "9500 GT",
        "9600 GT",
        "9800 GT",
        "9800 GTX",
        "GT 120",
        "GT 130",
        "GTS 250",
        "Quadro FX 580",
        "Quadro FX 1800",
        "Quadro FX 3800",
        "Quadro NVS 290",
    ),
    (1, 2): (
        "210",
        "G210",
        "GT 220",
        "GT 240",
        "GT 320",
        "GT 330",
        "GT 340",
        "Quadro FX 380",
        "NVS 300",
    ),
    (1, 3): (
        "GTX 260",
        "GTX 275",
        "GTX 280",
        "GTX 285",
        "GTX 295",
        "Tesla C1060",
        "Tesla S1070",
        "Quadro FX 4800",
        "Quadro FX 5800",
    ),
    (2, 0): (
        "GTX 465",
        "GTX 470",
        "GTX 480",
        "GTX 570",
        "GTX 580",
        "GTX 590",
        "Tesla C2050",
        "Tesla C2070",
        "Tesla M2050",
        "Tesla M2070",
        "Tesla M2090",
        "Quadro 4000",
        "Quadro 5000",
        "Quadro 6000",
    ),
    (2, 1): (
        "GT 430",
        "GT 440",
        "GTS 450",
        "GTX 460",
        "GTX 550 Ti",
        "GTX 560",
        "GT 610",
        "GT 620",
        "Quadro 600",
        "Quadro 2000",
        "NVS 310",
        "NVS 315",
    ),
    (3, 0): (
        "GTX 660",
        "GTX 670",
        "GTX 680",
        "GTX 690",
        "GTX 760",
        "GTX 770",
        "GT 740",
        "GTX 650",
        "GT 650M",
        "GT 750M",
        "GTX 660M",
        "GTX 680M",
        "Tesla K10",
        "Quadro K2000",
        "Quadro K4000",
        "Quadro K5000",
        "GRID K1",
        "GRID K2",
        "GRID K520",
    ),
    (3, 5): (
        "GTX 780",
        "GTX TITAN",
        "GTX TITAN Black",
        "GT 710",
        "GT 720",
        "Tesla K20",
        "Tesla K20c",
        "Tesla K20m",
        "Tesla K20X",
        "Tesla K40",
        "Tesla K40c",
        "Tesla K40m",
        "Quadro K6000",
        "Quadro K5200",
    ),
    (3, 7): ("Tesla K80", "K80"),
    (5, 0): (
        "GTX 745",
        "GTX 750",
        "GTX 750 Ti",
        "GeForce 830M",
        "GeForce 840M",
        "GTX 850M",
        "GeForce 920MX",
        "GeForce 930M",
        "GeForce 940M",
        "GeForce 940MX",
        "GTX 950M",
        "GTX 960M",
        "Quadro K620",
        "Quadro K1200",
        "Quadro K2200",
        "Tesla M10",
    ),
    (5, 2): (
        "GTX 950",
        "GTX 960",
        "GTX 970",
        "GTX 980",
        "GTX 980 Ti",
        "Tesla M4",
        "Tesla M40",
        "Tesla M6",
        "Tesla M60",
        "M40",
        "M60",
        "GTX 965M",
        "GTX 970M",
        "GTX 980M",
        "Quadro M2000",
        "Quadro M4000",
        "Quadro M5000",
        "Quadro M6000",
    ),
    (5, 3): ("Tegra X1", "Jetson Nano", "Jetson TX1"),
    (6, 0): ("Tesla P100", "P100", "Quadro GP100"),
    (6, 1): (
        "GTX 1050",
        "GTX 1050 Ti",
        "GTX 1060",
        "GTX 1070",
        "GTX 1070 Ti",
        "GTX 1080",
        "GTX 1080 Ti",
        "GT 1030",
        "MX150",
        "MX230",
        "MX250",
        "MX330",
        "MX350",
        "TITAN Xp",
        "TITAN X (Pascal)",
        "Tesla P4",
        "Tesla P40",
        "P4",
        "P40",
        "Tesla P6",
        "Quadro P400",
        "Quadro P600",
        "Quadro P620",
        "Quadro P1000",
        "Quadro P2000",
        "Quadro P2200",
        "Quadro P4000",
        "Quadro P5000",
        "Quadro P6000",
        "P102-100",
        "P104-100",
        "P106-100",
    ),
    (6, 2): ("Tegra X2", "Jetson TX2"),
    (7, 0): ("TITAN V", "Tesla V100", "V100", "V100S", "Quadro GV100", "CMP 100-210"),
    (7, 2): ("Xavier", "Jetson AGX Xavier", "Jetson Xavier NX"),
    (7, 5): (
        "RTX 2060",
        "RTX 2070",
        "RTX 2080",
        "RTX 2080 Ti",
        "GTX 1630",
        "GTX 1650",
        "GTX 1660",
        "GTX 1660 Ti",
        "MX450",
        "MX550",
        "TITAN RTX",
        "Tesla T4",
        "T4",
        "Quadro RTX 3000",
        "Quadro RTX 4000",
        "Quadro RTX 5000",
        "Quadro RTX 6000",
        "Quadro RTX 8000",
        "Quadro T1000",
        "Quadro T2000",
        "T400",
        "T500",
        "T550",
        "T600",
        "T1000",
        "T1200",
        "T2000",
    ),
    (8, 0): ("A100", "A800", "A30", "PG506"),
    (8, 6): (
        "RTX 3050",
        "RTX 3060",
        "RTX 3060 Ti",
        "RTX 3070",
        "RTX 3070 Ti",
        "RTX 3080",
        "RTX 3080 Ti",
        "RTX 3090",
        "RTX 3090 Ti",
        "RTX 2050",
        "MX570",
        "RTX A500",
        "RTX A1000",
        "RTX A2000",
        "RTX A3000",
        "RTX A4000",
        "RTX A4500",
        "RTX A5000",
        "RTX A5500",
        "RTX A6000",
        "A2",
        "A10",
        "A10G",
        "A10M",
        "A16",
        "A40",
        "CMP 70HX",
    ),
    (8, 7): ("Orin", "Jetson AGX Orin", "Jetson Orin NX", "Jetson Orin Nano"),
    (8, 9): (
        "RTX 4050",
        "RTX 4060",
        "RTX 4060 Ti",
        "RTX 4070",
        "RTX 4070 Ti",
        "RTX 4080",
        "RTX 4090",
        "RTX 2000 Ada",
        "RTX 3500 Ada",
        "RTX 4000 Ada",
        "RTX 4000 SFF Ada",
        "RTX 4500 Ada",
        "RTX 5000 Ada",
        "RTX 6000 Ada",
        "L4",
        "L20",
        "L40",
        "L40S",
        "L40G",
    ),
    (9, 0): ("H100", "H200", "H800", "H20", "GH200", "H100 NVL", "H200 NVL"),
    (10, 0): ("B100", "B200", "GB200"),
    (10, 3): ("B300", "GB300"),
    (11, 0): ("Thor", "Jetson Thor", "Jetson AGX Thor"),
    (12, 0): (
        "RTX 5050",
        "RTX 5060",
        "RTX 5060 Ti",
        "RTX 5070",
        "RTX 5070 Ti",
        "RTX 5080",
        "RTX 5090",
        "RTX PRO 500 Blackwell",
        "RTX PRO 1000 Blackwell",
        "RTX PRO 2000 Blackwell",
        "RTX PRO 4000 Blackwell",
        "RTX PRO 4500 Blackwell",
        "RTX PRO 5000 Blackwell",
        "RTX PRO 6000 Blackwell",
    ),
    (12, 1): ("GB10", "DGX Spark"),
}

# Words that do not change the chip: brand, product line, variant and packaging.
_DROP = re.compile(
    r"\b(?:NVIDIA|GeForce|Quadro(?= (?:RTX|[KMPT]\d|GP|GV|FX|NVS))|Tesla(?= [A-Z]+\d)|"
    r"Laptop GPU|with Max-Q Design|Max-Q(?: Design)?|Mobile|Generation|Developer Kit|"
    r"Workstation Edition|Server Edition)\b",
    re.I,
)
_MIG = re.compile(r"\s+MIG\s+\d+g\.\d+gb.*$", re.I)
# Memory and form factor: "-SXM4-80GB", " 80GB HBM3", "-PCIE-32GB", " PCIe", " (nvgpu)".
_PACKAGING = re.compile(
    r"(?:[- ](?:SXM\d?|PCIE|PCIe|NVL\d*|HBM\d?e?|\d+GB|MXM|DGXS|FHHL|LS)\b)+|\s*\(nvgpu\)",
    re.I,
)
# Variant suffixes that share the die of the model they follow.
_VARIANT = r"(?:\s+(?:Ti|SUPER|D|V2|BD|OEM|Lite Hash Rate|LHR))*"


def _normalise(name: str) -> str:
    text = _MIG.sub("", name)
    text = _DROP.sub(" ", text)
    text = _PACKAGING.sub(" ", text)
    return re.sub(r"\s+", " ", text).strip()


def _stem_pattern(stem: str) -> re.Pattern[str]:
    core = re.escape(_normalise(stem)).replace(r"\ ", r"\s+")
    return re.compile(rf"{core}{_VARIANT}", re.I)


@functools.cache
def _stems() -> tuple[tuple[re.Pattern[str], int, tuple[int, int]], ...]:
    """The name patterns, longest first; compiled on first use (some 300 patterns: about 25 ms
    that every `check` paid at import, GPU or not)."""
    return tuple(
        sorted(
            (
                (_stem_pattern(s), len(_normalise(s)), cap)
                for cap, stems in _NVIDIA.items()
                for s in stems
            ),
            key=lambda entry: -entry[1],
        )
    )


def capability(name: str | None) -> tuple[int, int] | None:
    """(major, minor) for a known NVIDIA product name, else None."""
    if not name:
        return None
    text = _normalise(name)
    for pattern, _, cap in _stems():
        if pattern.fullmatch(text):
            return cap
    return None


def mig_profile(name: str | None) -> str | None:
    """'2g.10gb' for a MIG slice name ("NVIDIA A100-SXM4-40GB MIG 2g.10gb"), else None."""
    m = re.search(r"\bMIG\s+(\d+g\.\d+gb)", name or "", re.I)
    return m.group(1) if m else None


# AMD: product name -> LLVM gfx target (what ROCm wheels are built for).
_AMD: tuple[tuple[str, str], ...] = (
    (r"MI355X?|MI350X?", "gfx950"),
    (r"MI300[AX]|MI325X", "gfx942"),
    (r"MI250X?|MI210", "gfx90a"),
    (r"MI100", "gfx908"),
    (r"MI50|MI60|Radeon VII|Radeon Pro VII", "gfx906"),
    (r"MI25|Vega (?:56|64)|Vega Frontier", "gfx900"),
    (r"RX 9070(?: XT| GRE)?|R9700", "gfx1201"),
    (r"RX 9060(?: XT)?", "gfx1200"),
    (r"Radeon 8060S|Radeon 8050S|Strix Halo|Ryzen AI Max", "gfx1151"),
    (r"Radeon 890M|Radeon 880M|Strix Point", "gfx1150"),
    (r"RX 7900 (?:XTX|XT|GRE)|Radeon Pro W7900|Radeon Pro W7800", "gfx1100"),
    (r"RX 7800 XT|RX 7700(?: XT)?|Radeon Pro W7700", "gfx1101"),
    (r"RX 7600(?: XT)?|Radeon Pro W7600|Radeon Pro W7500", "gfx1102"),
    (r"Radeon 780M|Radeon 760M|Phoenix", "gfx1103"),
    (r"RX 6950 XT|RX 6900 XT|RX 6800(?: XT)?|Radeon Pro W6800|Radeon Pro V620", "gfx1030"),
    (r"RX 6750 XT|RX 6700(?: XT)?|RX 6750 GRE", "gfx1031"),
    (r"RX 6650 XT|RX 6600(?: XT)?|Radeon Pro W6600", "gfx1032"),
    (r"RX 6500 XT|RX 6400", "gfx1034"),
    (r"RX 5700(?: XT)?|RX 5600(?: XT)?|Radeon Pro W5700", "gfx1010"),
    (r"RX 5500(?: XT)?|Radeon Pro W5500", "gfx1012"),
    (r"RX (?:470|480|570|580|590)", "gfx803"),
)


def gfx_target(name: str | None) -> str | None:
    """'gfx1100' for "AMD Radeon RX 7900 XTX" (or a name that already carries its target)."""
    if not name:
        return None
    carried = re.search(r"\b(gfx[0-9a-f]{3,4})\b", name, re.I)
    if carried:
        return carried.group(1).lower()
    for pattern, target in _AMD:
        if re.search(rf"(?<![\w]){pattern}(?![\w])", name, re.I):
            return target
    return None


# Intel: GPU name -> architecture (the XPU wheels list which they support).
_INTEL: tuple[tuple[str, str], ...] = (
    (r"Data Center GPU Max|Max 1[15]\d0", "pvc"),
    (r"Arc\(TM\) Pro B\d+|Arc\(TM\) B\d+|Arc Pro B\d+|Arc B\d+|\[0xe2\w\w\]", "bmg"),
    (r"Arc\(TM\) A\d+|Arc A\d+|Arc\(TM\) Pro A\d+|Data Center GPU Flex|\[0x56\w\w\]", "dg2"),
    (r"Arc\(TM\) (?:130V|140V)|Lunar Lake|\[0x64a0\]", "lnl"),
    (r"Core\(TM\) Ultra.*Arc|Meteor Lake|\[0x7d55\]", "mtl"),
    (r"Arrow Lake|\[0x7d51\]|\[0x7dd5\]", "arl"),
    (r"\[0xb080\]|Panther Lake", "ptl"),
)


def xpu_arch(name: str | None) -> str | None:
    """'bmg' for "Intel(R) Arc(TM) Pro B60 Graphics", 'dg2' for an Arc A770, else None."""
    for pattern, arch in _INTEL:
        if name and re.search(pattern, name, re.I):
            return arch
    return None
