"""Which environment variables each torch release reads, among those torchdoctor names or judges.

A remedy that sets, renames or unsets a variable is only right if the examined torch reads that
variable (issue 25, "version-blind"). Each row says from which release torch reads a variable,
until which release, what it was renamed to, and the source. Rows first checked 2026-11-24, then
against every release's own wheel on 2026-11-26 (``WHEELS_CHECKED``).

How the rows were built:
- ``wheel``: read from the released wheels, which are built from their release tag, so their
  members are that tag's shipped source. ``scripts/release_strings.py`` read the wheel of every
  minor from 1.8 to 2.13 (``WHEELS``: latest patch, the PyPI Linux x86_64 CUDA build; and the
  macOS arm64 wheels from 1.12 for MPS): the strings of ``torch/lib/libc10.so``,
  ``libc10_cuda.so``, ``libtorch_cpu.so``, ``libtorch_cuda*.so``, ``libtorch_python.so``, the
  headers and the Python files. What each release holds is in ``release_strings.json`` (per
  release and name, the members holding it); ``shipped_in`` names the members whose strings show
  a row's variable is read, and tests/test_release_wheels.py holds every row to that file.
- ``pr``: the upstream pull request that added or renamed the variable (search tool, issues
  corpus); the first release is the one whose branch was cut after the merge.
- ``report``: a public report that shows the released behaviour (a warning line, a repro) on a
  named torch version.
- ``SOURCES_READ`` (below): upstream source files read from the stored-code index, each by
  commit and path; none could be mapped to a release tag, so they confirm names, not releases.
Where a release between two known points cannot be told, it is listed in ``unsure`` and every
question about it answers ``None`` (unknown), never a guess. A library's string counts as "read"
only where the name is a string of its own (getenv's or the key parser's argument, or the tail
the linker merged it into), not where it only appears inside a message.
"""

from __future__ import annotations

from dataclasses import dataclass

from .compat import parse_version, torch_minor

CHECKED = "2026-11-24"
WHEELS_CHECKED = "2026-11-26"  # release_strings.json: the wheels of 1.8 to 2.13
OLDEST = "1.8"  # the table covers torch 1.8 and later
NEWEST = "2.14"  # the newest release a row was checked against (2.14.1 wheel)


def minors(first: str, last: str) -> tuple[str, ...]:
    """The release minors from ``first`` to ``last`` inclusive ('2.9', '2.11' -> 2.9 2.10 2.11)."""
    series = [f"1.{m}" for m in range(8, 14)] + [f"2.{m}" for m in range(0, 15)]
    lo, hi = parse_version(first), parse_version(last)
    return tuple(m for m in series if lo <= parse_version(m) <= hi)


@dataclass(frozen=True)
class EnvVar:
    name: str
    since: str | None  # first torch minor that reads it; None: before OLDEST
    source: str
    basis: str  # wheel | pr | report (see the module docstring)
    until: str | None = None  # last minor that reads it; None: still read in NEWEST
    renamed_to: str | None = None  # the newer name torch prefers
    renamed_in: str | None = None  # the release that introduced the newer name
    scope: str = "runtime"  # runtime | build (torch's own CMake) | extension (cpp_extension)
    platform: str = "any"  # any | cuda | rocm | mps
    unsure: tuple[str, ...] = ()  # minors where reading it cannot be told from the sources
    # torch/lib libraries (name prefixes) or source files whose strings show, release by
    # release, that torch reads it (release_strings.json; tests/test_release_wheels.py)
    shipped_in: tuple[str, ...] = ()


# The wheel read for each release (release_strings.json; tests hold the two equal).
WHEELS: dict[str, str] = {
    "1.8": "torch-1.8.1-cp39-cp39-manylinux1_x86_64.whl",
    "1.9": "torch-1.9.1-cp39-cp39-manylinux1_x86_64.whl",
    "1.10": "torch-1.10.2-cp39-cp39-manylinux1_x86_64.whl",
    "1.11": "torch-1.11.0-cp39-cp39-manylinux1_x86_64.whl",
    "1.12": "torch-1.12.1-cp39-cp39-manylinux1_x86_64.whl",
    "1.13": "torch-1.13.1-cp39-cp39-manylinux1_x86_64.whl",
    "2.0": "torch-2.0.1-cp310-cp310-manylinux1_x86_64.whl",
    "2.1": "torch-2.1.2-cp310-cp310-manylinux1_x86_64.whl",
    "2.2": "torch-2.2.2-cp310-cp310-manylinux1_x86_64.whl",
    "2.3": "torch-2.3.1-cp310-cp310-manylinux1_x86_64.whl",
    "2.4": "torch-2.4.1-cp310-cp310-manylinux1_x86_64.whl",
    "2.5": "torch-2.5.1-cp310-cp310-manylinux1_x86_64.whl",
    "2.6": "torch-2.6.0-cp310-cp310-manylinux1_x86_64.whl",
    "2.7": "torch-2.7.1-cp310-cp310-manylinux_2_28_x86_64.whl",
    "2.8": "torch-2.8.0-cp310-cp310-manylinux_2_28_x86_64.whl",
    "2.9": "torch-2.9.1-cp310-cp310-manylinux_2_28_x86_64.whl",
    "2.10": "torch-2.10.0-3-cp310-cp310-manylinux_2_28_x86_64.whl",
    "2.11": "torch-2.11.0-cp310-cp310-manylinux_2_28_x86_64.whl",
    "2.12": "torch-2.12.1-cp310-cp310-manylinux_2_28_x86_64.whl",
    "2.13": "torch-2.13.0-cp312-cp312-manylinux_2_28_x86_64.whl",
}
MAC_WHEELS: dict[str, str] = {
    "1.12": "torch-1.12.1-cp39-none-macosx_11_0_arm64.whl",
    "1.13": "torch-1.13.1-cp39-none-macosx_11_0_arm64.whl",
}


def first_in(minor: str, member: str, mac: bool = False) -> str:
    """Cite the first wheel whose MEMBER holds a name (the earlier wheels do not)."""
    wheels = MAC_WHEELS if mac else WHEELS
    return f"first in {wheels[minor]}: {member} (wheels checked {WHEELS_CHECKED})"


_NCCL_RENAME = (
    "pytorch#114077 (2023-11-19, 'Avoid using NCCL_ prefix for non-NCCL env variables'): the "
    "old name is still read with a deprecation warning (ray-project/ray#47292 quotes it on 2.2+)"
)
# From 2.2 the old NCCL_ name's bytes are the tail of the TORCH_NCCL_ string (the linker merged
# the two literals), so from 2.2 the wheels cannot show on their own that the old name is read:
# those releases rest on pytorch#114077 and ray-project/ray#47292.
_NCCL_TAIL = "from 2.2 only as the merged tail of the TORCH_ name (read per pytorch#114077)"
_NCCL_LIBS = ("libtorch_cuda", "libtorch_python")  # c10d sat in libtorch_python.so until 1.9
_C10 = ("libc10",)  # libc10.so and libc10_cuda.so

VARIABLES: dict[str, EnvVar] = {
    v.name: v
    for v in (
        EnvVar(
            "PYTORCH_CUDA_ALLOC_CONF",
            "1.10",
            first_in("1.10", "torch/lib/libc10_cuda.so") + "; absent from 1.8.1 and 1.9.1; "
            "pytorch#44742 (max_split_size_mb behind this variable, discussed 2021-01)",
            "wheel",
            renamed_to="PYTORCH_ALLOC_CONF",
            renamed_in="2.9",
            platform="cuda",
            shipped_in=_C10,
        ),
        EnvVar(
            "PYTORCH_ALLOC_CONF",
            "2.9",
            first_in("2.9", "torch/lib/libc10.so") + " (c10/core/AllocatorConfig.cpp, "
            "pytorch#149601); absent from 2.8.0; the 'PYTORCH_CUDA_ALLOC_CONF is deprecated, "
            "use PYTORCH_ALLOC_CONF' warning on 2.9.0 (Comfy-Org/ComfyUI#10386, 2025-10-17)",
            "wheel",
            shipped_in=_C10,
        ),
        EnvVar(
            "PYTORCH_HIP_ALLOC_CONF",
            None,
            "ROCm builds only, so the CUDA wheels show it only where the source is shared: "
            "read under USE_ROCM in torch/include/c10/cuda/CUDAAllocatorConfig.h of "
            f"{WHEELS['2.8']}, and in torch/lib/libc10.so from {WHEELS['2.9']}; before 2.8 a "
            "ROCm build's name (hipify) cannot be told from a CUDA wheel",
            "wheel",
            platform="rocm",
            unsure=minors("1.8", "2.7"),
            shipped_in=("libc10", "CUDAAllocatorConfig.h"),
        ),
        EnvVar(
            "PYTORCH_NO_CUDA_MEMORY_CACHING",
            None,
            f"torch/lib/libc10_cuda.so of every wheel from {WHEELS['1.8']} to 2.13.0 "
            f"(checked {WHEELS_CHECKED}); before 2.0 any value, even 0, disabled caching "
            "(pytorch#90431, 2022-12-08)",
            "wheel",
            platform="cuda",
            shipped_in=("libc10_cuda",),
        ),
        EnvVar(
            "PYTORCH_USE_CUDA_DSA",
            "2.0",
            first_in("2.0", "torch/lib/libc10_cuda.so") + "; absent from 1.13.1 (run-time "
            "switch for device-side assertions in a build compiled with TORCH_USE_CUDA_DSA)",
            "wheel",
            platform="cuda",
            shipped_in=("libc10_cuda",),
        ),
        EnvVar(
            "TORCH_USE_CUDA_DSA",
            "2.0",
            "a CMake option of torch's own build, a preprocessor macro in the headers (#ifdef "
            "TORCH_USE_CUDA_DSA in torch/include/c10/cuda/CUDADeviceAssertionHost.h, and the "
            f"'Compile with `TORCH_USE_CUDA_DSA`' hint in torch/lib/libc10_cuda.so, both first "
            f"in {WHEELS['2.0']}); in no wheel's libraries is it a string of its own (only the "
            "hint, and the tail of PYTORCH_USE_CUDA_DSA): an installed wheel never reads it",
            "wheel",
            scope="build",
            platform="cuda",
        ),
        EnvVar(
            "TORCH_CUDA_ARCH_LIST",
            None,
            f"torch/utils/cpp_extension.py of every wheel from {WHEELS['1.8']} to 2.13.0 "
            "(read when building an extension; also torch's own CMake)",
            "wheel",
            scope="extension",
            platform="cuda",
            shipped_in=("cpp_extension.py",),
        ),
        EnvVar(
            "CUDA_LAUNCH_BLOCKING",
            None,
            "read by the CUDA runtime in every release; also by torch/lib/libc10_cuda.so from "
            f"{WHEELS['1.9']}",
            "wheel",
            platform="cuda",
        ),
        EnvVar(
            "TORCH_SHOW_CPP_STACKTRACES",
            None,
            f"torch/lib/libtorch_python.so of {WHEELS['1.8']} to 1.11.0, "
            "torch/lib/libtorch_cpu.so from 1.12.1 to 2.13.0 (c10/util/Exception)",
            "wheel",
            shipped_in=("libtorch_python", "libtorch_cpu"),
        ),
        EnvVar(
            "PYTORCH_ENABLE_MPS_FALLBACK",
            "1.12",
            first_in("1.12", "torch/lib/libtorch_cpu.dylib", mac=True) + " (the MPS backend "
            "first shipped in 1.12; no earlier macOS arm64 wheel)",
            "wheel",
            platform="mps",
            shipped_in=("libtorch_cpu",),
        ),
        EnvVar(
            "PYTORCH_MPS_HIGH_WATERMARK_RATIO",
            "1.13",
            first_in("1.13", "torch/lib/libtorch_cpu.dylib", mac=True) + "; absent from "
            "1.12.1 (aten/src/ATen/mps/MPSAllocator)",
            "wheel",
            platform="mps",
            shipped_in=("libtorch_cpu",),
        ),
        EnvVar(
            "PYTORCH_MPS_LOW_WATERMARK_RATIO",
            "1.13",
            first_in("1.13", "torch/lib/libtorch_cpu.dylib", mac=True) + ", with the high "
            "one; absent from 1.12.1",
            "wheel",
            platform="mps",
            shipped_in=("libtorch_cpu",),
        ),
        # NCCL: torch's own switches moved from NCCL_* to TORCH_NCCL_* in 2.2.
        EnvVar(
            "NCCL_ASYNC_ERROR_HANDLING",
            None,
            f"torch/lib/libtorch_python.so of {WHEELS['1.8']} and 1.9.1, libtorch_cuda*.so "
            f"from 1.10.2; {_NCCL_TAIL}; pytorch#44163 (2020-09); " + _NCCL_RENAME,
            "wheel",
            renamed_to="TORCH_NCCL_ASYNC_ERROR_HANDLING",
            renamed_in="2.2",
            shipped_in=_NCCL_LIBS,
        ),
        EnvVar(
            "TORCH_NCCL_ASYNC_ERROR_HANDLING",
            "2.2",
            first_in("2.2", "torch/lib/libtorch_cuda.so") + "; " + _NCCL_RENAME,
            "wheel",
            shipped_in=_NCCL_LIBS,
        ),
        EnvVar(
            "NCCL_BLOCKING_WAIT",
            None,
            f"torch/lib/libtorch_python.so of {WHEELS['1.8']} and 1.9.1, libtorch_cuda*.so "
            f"from 1.10.2; {_NCCL_TAIL}; " + _NCCL_RENAME,
            "wheel",
            renamed_to="TORCH_NCCL_BLOCKING_WAIT",
            renamed_in="2.2",
            shipped_in=_NCCL_LIBS,
        ),
        EnvVar(
            "TORCH_NCCL_BLOCKING_WAIT",
            "2.2",
            first_in("2.2", "torch/lib/libtorch_cuda.so") + "; " + _NCCL_RENAME,
            "wheel",
            shipped_in=_NCCL_LIBS,
        ),
        EnvVar(
            "NCCL_DESYNC_DEBUG",
            "1.11",
            first_in("1.11", "torch/lib/libtorch_cuda.so") + "; absent from 1.8.1 to 1.10.2; "
            f"{_NCCL_TAIL}; " + _NCCL_RENAME,
            "wheel",
            renamed_to="TORCH_NCCL_DESYNC_DEBUG",
            renamed_in="2.2",
            shipped_in=_NCCL_LIBS,
        ),
        EnvVar(
            "TORCH_NCCL_DESYNC_DEBUG",
            "2.2",
            first_in("2.2", "torch/lib/libtorch_cuda.so") + "; " + _NCCL_RENAME,
            "wheel",
            shipped_in=_NCCL_LIBS,
        ),
        EnvVar(
            "NCCL_ENABLE_TIMING",
            "2.1",
            first_in("2.1", "torch/lib/libtorch_cuda.so") + "; absent from 1.8.1 to 2.0.1; "
            f"{_NCCL_TAIL}; " + _NCCL_RENAME,
            "wheel",
            renamed_to="TORCH_NCCL_ENABLE_TIMING",
            renamed_in="2.2",
            shipped_in=_NCCL_LIBS,
        ),
        EnvVar(
            "TORCH_NCCL_ENABLE_TIMING",
            "2.2",
            first_in("2.2", "torch/lib/libtorch_cuda.so") + "; " + _NCCL_RENAME,
            "wheel",
            shipped_in=_NCCL_LIBS,
        ),
    )
}


# Stored upstream source read for these tables (issue 25 asks for each release tag's source).
# What the store holds: pytorch/pytorch files at a few commits each, reachable only by a known
# commit hash (find_files/read_file name one per file; no tag, date or log is stored), and
# version.txt only at 04ee2b9e (2.0.1) and f3b72801 (2.11.0a0), where no allocator or env
# file is stored. So no commit below could be mapped to a release ("release": None); their
# content (c10/core/AllocatorConfig.*) places each after pytorch#149601. What they confirm is
# that a row's name or key is real and read by torch, not from which release.
@dataclass(frozen=True)
class SourceRead:
    commit: str  # 40 hex digits, as read_file named it
    path: str
    release: str | None  # None: the commit could not be mapped to a release (see above)
    shows: tuple[str, ...]  # the variables or allocator keys this file reads
    read: str = CHECKED


SOURCES_READ: tuple[SourceRead, ...] = (
    SourceRead(
        "0ac716637f3258efcaf7fdfb851bdd520c9c1441",
        "c10/core/AllocatorConfig.cpp",
        None,
        # reads PYTORCH_ALLOC_CONF first, then the two older names with a deprecation warning
        ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF"),
    ),
)
# Rows no stored source file was read for: their basis stays the wheel, PR or report above.
NOT_READ_NOTE = (
    "no stored upstream file read for this row; tried at the 2.0.1 commit 04ee2b9e: "
    "docs/source/notes/cuda.rst, c10/cuda/CUDACachingAllocator.cpp and "
    "torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp are not stored there"
)


def sources_read(name: str) -> tuple[SourceRead, ...]:
    """The stored upstream files read that show ``name`` (a variable or an allocator key)."""
    return tuple(s for s in SOURCES_READ if name in s.shows)


def _minor(version: str | None) -> tuple[int, ...]:
    return parse_version(torch_minor(version))


def in_range(version: str | None) -> bool:
    """Is ``version`` a release this table covers (OLDEST..NEWEST)?"""
    v = _minor(version)
    return bool(v) and parse_version(OLDEST) <= v <= parse_version(NEWEST)


def reads(name: str, torch_version: str | None) -> bool | None:
    """Does this torch release read ``name``? None when the tables cannot say (unknown variable,
    unknown or out-of-range version, or a release listed as unsure)."""
    row = VARIABLES.get(name)
    if row is None or not in_range(torch_version):
        return None
    minor = torch_minor(torch_version)
    if minor in row.unsure:
        return None
    v = _minor(torch_version)
    if row.since and v < parse_version(row.since):
        return False
    return not (row.until and v > parse_version(row.until))


def preferred_name(name: str, torch_version: str | None) -> str | None:
    """The newer name this release prefers for ``name`` (it reads both), or None when there is
    none or the release does not read the newer name yet."""
    row = VARIABLES.get(name)
    if row is None or not row.renamed_to:
        return None
    return row.renamed_to if reads(row.renamed_to, torch_version) else None
