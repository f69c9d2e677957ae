"""Which environment variables each torch release reads, among those torchdoctor names or judges.

A remedy that sets, renames or unsets a variable is only right if the examined torch reads that
variable (issue 25, "version-blind"). Each row says from which release torch reads a variable,
until which release, what it was renamed to, and the source. Checked 2026-11-24.

How the rows were built (the pytorch/pytorch snapshot is 4 GB, over the 500 MB ``fetch`` limit,
so release tags could not be checked out here):
- ``wheel``: read from a released wheel on this machine: ``strings`` on ``torch/lib/libc10.so``,
  ``libc10_cuda.so``, ``libtorch_cpu.so`` and ``libtorch_cuda.so`` of torch 2.13.0 (CPU) and
  2.14.1 (cu130), and ``torch/utils/cpp_extension.py`` of 2.13.0.
- ``pr``: the upstream pull request that added or renamed the variable (search tool, issues
  corpus); the first release is the one whose branch was cut after the merge.
- ``report``: a public report that shows the released behaviour (a warning line, a repro) on a
  named torch version.
- ``SOURCES_READ`` (below): upstream source files read from the stored-code index, each by
  commit and path; none could be mapped to a release tag, so they confirm names, not releases.
Where a release between two known points cannot be told, it is listed in ``unsure`` and every
question about it answers ``None`` (unknown), never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

from .compat import parse_version, torch_minor

CHECKED = "2026-11-24"
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


_NCCL_RENAME = (
    "pytorch#114077 (2023-11-19, 'Avoid using NCCL_ prefix for non-NCCL env variables'): the "
    "old name is still read with a deprecation warning (ray-project/ray#47292 quotes it on 2.2+)"
)

VARIABLES: dict[str, EnvVar] = {
    v.name: v
    for v in (
        EnvVar(
            "PYTORCH_CUDA_ALLOC_CONF",
            "1.10",
            "pytorch#44742 (max_split_size_mb behind this variable, discussed 2021-01); present "
            "in libc10.so of 2.13.0 and 2.14.1",
            "pr",
            renamed_to="PYTORCH_ALLOC_CONF",
            renamed_in="2.9",
            platform="cuda",
            unsure=("1.8", "1.9"),
        ),
        EnvVar(
            "PYTORCH_ALLOC_CONF",
            "2.9",
            "c10/core/AllocatorConfig.cpp (pytorch#149601); the 'PYTORCH_CUDA_ALLOC_CONF is "
            "deprecated, use PYTORCH_ALLOC_CONF' warning on 2.9.0 (Comfy-Org/ComfyUI#10386, "
            "2025-10-17); present in libc10.so of 2.13.0 and 2.14.1",
            "report",
            unsure=("2.8",),
        ),
        EnvVar(
            "PYTORCH_HIP_ALLOC_CONF",
            None,
            "present in libc10.so of 2.13.0 and 2.14.1 (ROCm builds)",
            "wheel",
            platform="rocm",
            unsure=minors("1.8", "2.12"),
        ),
        EnvVar(
            "PYTORCH_NO_CUDA_MEMORY_CACHING",
            None,
            "docs/source/notes/cuda.rst (all releases in range); libc10_cuda.so of 2.14.1; "
            "before 2.0 any value, even 0, disabled caching (pytorch#90431, 2022-12-08)",
            "wheel",
            platform="cuda",
        ),
        EnvVar(
            "PYTORCH_USE_CUDA_DSA",
            None,
            "libc10_cuda.so of 2.14.1 (run-time switch for device-side assertions in a build "
            "compiled with TORCH_USE_CUDA_DSA)",
            "wheel",
            platform="cuda",
            unsure=minors("1.8", "2.13"),
        ),
        EnvVar(
            "TORCH_USE_CUDA_DSA",
            "2.0",
            "a CMake option of torch's own build (the 'Compile with TORCH_USE_CUDA_DSA' hint); "
            "absent from every library of the 2.14.1 wheel: an installed wheel never reads it",
            "wheel",
            scope="build",
            platform="cuda",
        ),
        EnvVar(
            "TORCH_CUDA_ARCH_LIST",
            None,
            "torch/utils/cpp_extension.py (read when building an extension; also torch's own "
            "CMake); 2.13.0 wheel",
            "wheel",
            scope="extension",
            platform="cuda",
        ),
        EnvVar(
            "CUDA_LAUNCH_BLOCKING",
            None,
            "read by the CUDA runtime in every release; also by libc10_cuda.so of 2.14.1",
            "wheel",
            platform="cuda",
        ),
        EnvVar(
            "TORCH_SHOW_CPP_STACKTRACES",
            None,
            "libtorch_cpu.so of 2.14.1; c10/util/Exception (all releases in range)",
            "wheel",
        ),
        EnvVar(
            "PYTORCH_ENABLE_MPS_FALLBACK",
            "1.12",
            "aten/src/ATen/mps (the MPS backend first shipped in 1.12)",
            "pr",
            platform="mps",
        ),
        EnvVar(
            "PYTORCH_MPS_HIGH_WATERMARK_RATIO",
            "2.0",
            "aten/src/ATen/mps/MPSAllocator (the watermark allocator); 1.13 unsure",
            "pr",
            platform="mps",
            unsure=("1.13",),
        ),
        EnvVar(
            "PYTORCH_MPS_LOW_WATERMARK_RATIO",
            "2.1",
            "aten/src/ATen/mps/MPSAllocator (low watermark added after the high one); 2.0 unsure",
            "pr",
            platform="mps",
            unsure=("2.0",),
        ),
        # NCCL: torch's own switches moved from NCCL_* to TORCH_NCCL_* in 2.2.
        EnvVar(
            "NCCL_ASYNC_ERROR_HANDLING",
            None,
            "pytorch#44163 (2020-09, before 1.8); " + _NCCL_RENAME + "; still in "
            "libtorch_cuda.so of 2.14.1",
            "wheel",
            renamed_to="TORCH_NCCL_ASYNC_ERROR_HANDLING",
            renamed_in="2.2",
        ),
        EnvVar(
            "TORCH_NCCL_ASYNC_ERROR_HANDLING",
            "2.2",
            _NCCL_RENAME + "; libtorch_cuda.so of 2.14.1",
            "pr",
        ),
        EnvVar(
            "NCCL_BLOCKING_WAIT",
            None,
            "torch.distributed docs of 1.7 (pytorch#46879); " + _NCCL_RENAME,
            "pr",
            renamed_to="TORCH_NCCL_BLOCKING_WAIT",
            renamed_in="2.2",
        ),
        EnvVar("TORCH_NCCL_BLOCKING_WAIT", "2.2", _NCCL_RENAME, "pr"),
        EnvVar(
            "NCCL_DESYNC_DEBUG",
            None,
            _NCCL_RENAME,
            "pr",
            renamed_to="TORCH_NCCL_DESYNC_DEBUG",
            renamed_in="2.2",
            unsure=minors("1.8", "1.10"),
        ),
        EnvVar("TORCH_NCCL_DESYNC_DEBUG", "2.2", _NCCL_RENAME, "pr"),
        EnvVar(
            "NCCL_ENABLE_TIMING",
            None,
            _NCCL_RENAME,
            "pr",
            renamed_to="TORCH_NCCL_ENABLE_TIMING",
            renamed_in="2.2",
            unsure=minors("1.8", "2.0"),
        ),
        EnvVar("TORCH_NCCL_ENABLE_TIMING", "2.2", _NCCL_RENAME, "pr"),
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
