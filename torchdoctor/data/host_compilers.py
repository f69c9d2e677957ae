"""The newest host GCC each CUDA release's nvcc accepts, and where torch's headers need less.

nvcc compiles a ``.cu`` file's host code with a C++ compiler (``gcc`` on PATH unless ``-ccbin``,
``NVCC_CCBIN`` or torch's ``-ccbin $CC`` name another) and refuses one newer than the toolkit
knows, in ``include/crt/host_config.h``::

    #if __GNUC__ > 12
    #error -- unsupported GNU version! gcc versions later than 12 are not supported! ...

unless nvcc is given ``-allow-unsupported-compiler``. Only the major version is checked ("NVCC
performs a version check on the host compiler's major version", NVIDIA CUDA Installation Guide
for Linux, "Host Compiler Support Policy"). A live check reads the gate from the toolkit's own
header (``probes/toolchain.py``); this table serves recorded facts that lack it.

Checked 2026-11-26. Sources, per release (the number is the ``N`` of "later than N"):
- 8.0: 5; 9.0, 9.1: 6; 9.2, 10.0: 7 -- the host_config.h of NVIDIA's nvidia/cuda images,
  grepped release by release in spack/spack#25054 (2021-07-23); 9.0's "later than 6" also in
  facebookresearch/detectron2#2052 (2020-09), 10.0's "later than 7" in
  lamoureux-lab/TorchProteinLibrary#25.
- 10.1, 10.2: 8 -- CUDA 10.1 release notes ("added support for GCC 8"), as nixpkgs'
  cuda-modules nvcc compatibility table cites them; "later than 8" with CUDA 10.1 in
  DeadSix27/waifu2x-converter-cpp#203 (2019-10).
- 11.0: 9; 11.1, 11.2, 11.3: 10 -- CUDA 11.0/11.1.1 release notes and 11.2.2 installation guide
  (nixpkgs' table), and torch's own ``cpp_extension.CUDA_GCC_VERSIONS`` (torch 2.13: '11.0'
  below 10, '11.1'..'11.3' below 11).
- 11.4: 11 from 11.4.1 on; 11.4.0 (nvcc V11.4.48) stops at 10 -- 11.4.1/11.4.2 release notes
  (spack/spack#26892, 2021-10; pytorch/pytorch#81039) and torch's special case for "V11.4.48".
- 11.5 .. 11.8: 11 -- torch's CUDA_GCC_VERSIONS ('11.4'..'11.7' below 12); 11.8's header
  ("#if __GNUC__ > 11") quoted in a toolkit installer's test data (2026).
- 12.0 .. 12.3: 12 -- 12.0.1, 12.2.2 and 12.3.2 installation guides (nixpkgs' table); "later
  than 12" with CUDA 12.1 in NVlabs/instant-ngp#1562 and NVIDIA/cuda-samples#250. (torch 2.13's
  CUDA_GCC_VERSIONS lets '12.3' go to 13: its own check is laxer than nvcc's gate there.)
- 12.4, 12.5: 13 -- 12.4.1 and 12.5.0 installation guides (nixpkgs' table); "later than 13"
  with CUDA 12.5 in karpathy/llm.c#824 (2025-07).
- 12.6: 13 -- "CUDA 12.6 include/crt/host_config.h:141 = #if __GNUC__ > 13" (a k2 build note).
- 12.8, 12.9: 14 -- headers quoted in a toolkit installer's test data and a build note
  ("cuda-12.8 ... #if __GNUC__ > 14"); "CUDA 12.9 caps host-compiler support at GCC 14".
- 13.0: 15 -- /usr/local/cuda-13.0/include/crt/host_config.h (13.0.88), read here.
- 13.1: 15 (spack's CUDA conflicts: gcc 16 conflicts with cuda up to 13.1); 13.3: 15
  (cms-patatrack/pixeltrack-standalone#432, 2026-08: "CUDA 13.3 only supports GCC<=15"); 13.2,
  between two releases that both stop at 15, stops there too (the gate never goes down).

torch's headers ask more of two old releases than their gate does: nvcc 9.0 and 9.1 cannot
compile the ``<tuple>`` of GCC 6 ("body of constexpr function ... not a return-statement"), so
torch's own build refused that pair (pytorch/pytorch#8863, 2018-06: "NVCC 9/9.1 cannot compile
std::tuple header from GCC >= 6"), and facebookresearch/detectron2#761 (2020-01, nvcc 9.0 with
gcc 6) was settled as "nvcc 9.0 only supports gcc <= 5". ``-allow-unsupported-compiler`` does
not help there: the gate is not what fails.
"""

from __future__ import annotations

CHECKED = "2026-11-26"

# CUDA release (major.minor) -> the newest GCC major its nvcc's host_config.h accepts
NVCC_GCC_MAX: dict[str, int] = {
    "8.0": 5,
    "9.0": 6,
    "9.1": 6,
    "9.2": 7,
    "10.0": 7,
    "10.1": 8,
    "10.2": 8,
    "11.0": 9,
    "11.1": 10,
    "11.2": 10,
    "11.3": 10,
    "11.4": 11,
    "11.5": 11,
    "11.6": 11,
    "11.7": 11,
    "11.8": 11,
    "12.0": 12,
    "12.1": 12,
    "12.2": 12,
    "12.3": 12,
    "12.4": 13,
    "12.5": 13,
    "12.6": 13,
    "12.8": 14,
    "12.9": 14,
    "13.0": 15,
    "13.1": 15,
    "13.2": 15,
    "13.3": 15,
}

# A patch release whose gate differs from its minor's: nvcc's full version -> GCC major
NVCC_GCC_MAX_BY_VERSION: dict[str, int] = {"11.4.48": 10}  # 11.4.0

# Releases whose nvcc passes GCC's gate but cannot compile torch's headers with newer GCC
TORCH_GCC_MAX: dict[str, int] = {"9.0": 5, "9.1": 5}  # pytorch/pytorch#8863


def _key(release: tuple[int, int]) -> str:
    return f"{release[0]}.{release[1]}"


def gate(release: tuple[int, int], version: str | None = None) -> int | None:
    """The newest GCC major nvcc of ``release`` (full ``version``, e.g. 11.4.48) lets through."""
    if version and version in NVCC_GCC_MAX_BY_VERSION:
        return NVCC_GCC_MAX_BY_VERSION[version]
    return NVCC_GCC_MAX.get(_key(release))


def torch_limit(release: tuple[int, int]) -> int | None:
    """The newest GCC major with which nvcc of ``release`` compiles torch's headers, where that
    is lower than its gate."""
    return TORCH_GCC_MAX.get(_key(release))


def first_accepting(gcc_major: int, cuda_major: int) -> tuple[int, int] | None:
    """The oldest release of CUDA ``cuda_major`` whose nvcc builds torch code with GCC
    ``gcc_major``: the smallest toolkit step that keeps this compiler."""
    for key, limit in sorted(NVCC_GCC_MAX.items(), key=lambda kv: _parse(kv[0])):
        release = _parse(key)
        if release[0] != cuda_major or limit < gcc_major:
            continue
        if (torch_limit(release) or limit) >= gcc_major:
            return release
    return None


def _parse(key: str) -> tuple[int, int]:
    major, minor = key.split(".")
    return int(major), int(minor)
