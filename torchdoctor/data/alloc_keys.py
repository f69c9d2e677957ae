"""Which CUDA caching-allocator keys, value syntax and variables each torch release accepts.

``alloc_conf.KEYS`` is the key list of the newest release (2.13/2.14); this table says from which
release torch knows each key, so a setting that an older torch rejects ("Unrecognized
CachingAllocator option", raised at the first CUDA allocation) or a remedy that proposes a key
the examined torch does not know is caught. Checked 2026-11-24; bases as in ``torch_env``:
``wheel`` (strings of libc10.so / libc10_cuda.so of 2.13.0 and 2.14.1, and the installed
``c10/cuda/CUDAAllocatorConfig.h`` of 2.13.0), ``pr`` (the upstream pull request that added the
key, search tool, issues corpus; first release = first branch cut after the merge), ``report``.
Releases a row cannot place are in ``unsure``; questions about them answer None.
"""

from __future__ import annotations

from dataclasses import dataclass

from .compat import parse_version, torch_minor
from .torch_env import SourceRead, in_range, minors

CHECKED = "2026-11-24"


@dataclass(frozen=True)
class Key:
    name: str
    since: str | None  # first torch minor that accepts it; None: unknown before VERIFIED_IN
    source: str
    basis: str
    unsure: tuple[str, ...] = ()


VERIFIED_IN = "2.13"  # every key below is accepted by 2.13.0 and 2.14.1 (basis "wheel")
_WHEEL = "libc10.so / libc10_cuda.so strings of 2.13.0 and 2.14.1"
_BEFORE_213 = minors("1.8", "2.12")


KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        Key("max_split_size_mb", "1.10", "pytorch#44742 (2021-01/02)", "pr", ("1.8", "1.9")),
        Key(
            "roundup_power2_divisions",
            "1.12",
            "pytorch#74213 (2022-03-15, 'Better use of blocks with rounding')",
            "pr",
        ),
        Key(
            "garbage_collection_threshold",
            "1.12",
            "c10/cuda/CUDACachingAllocator.cpp; documented with roundup_power2_divisions",
            "pr",
            ("1.11",),
        ),
        Key(
            "backend",
            "2.0",
            "pytorch#82682 (2022-08, cudaMallocAsync backend, after #65365)",
            "pr",
            ("1.13",),
        ),
        Key("expandable_segments", "2.1", "pytorch#96995 (2023-04, 'Expandable blocks')", "pr"),
        Key(
            "release_lock_on_cudamalloc",
            "2.2",
            "pytorch#108367 (2023-08-31); ROCm/pytorch#1304 (2023-10-24) shows "
            "'Unrecognized CachingAllocator option: release_lock_on_cudamalloc' on a 2.1 branch",
            "pr",
        ),
        Key("pinned_use_cuda_host_register", "2.2", "pytorch#108488 (2023-09/10)", "pr"),
        Key("pinned_num_register_threads", "2.2", "pytorch#108488 (2023-09/10)", "pr"),
        Key("max_non_split_rounding_mb", "2.6", "pytorch#136174 (2024-09-16)", "pr", ("2.5",)),
        Key("pinned_reserve_segment_size_mb", "2.10", "pytorch#163780 (2025-09-30)", "pr"),
        Key(
            "pinned_max_round_threshold_mb",
            "2.11",
            "pytorch#171662 (2026-01)",
            "pr",
            ("2.10",),
        ),
        Key(
            "pinned_max_cached_size_mb",
            "2.11",
            "pytorch#171662 (2026-01)",
            "pr",
            ("2.10",),
        ),
    )
}
# Keys only known to be accepted from VERIFIED_IN on (their first release was not traced).
for _name in (
    "pinned_use_background_threads",
    "large_segment_size_mb",
    "release_lock_on_hipmalloc",
    "pinned_use_hip_host_register",
    "graph_capture_record_stream_reuse",
    "per_process_memory_fraction",
    "pinned_free_catch_all",
    "throw_on_cudamalloc_oom",
):
    KEYS[_name] = Key(_name, None, _WHEEL, "wheel", _BEFORE_213)

# Upstream allocator sources read from the stored-code index (see torch_env.SOURCES_READ for
# what the store holds and why no commit maps to a release tag). Each lists the keys that file
# parses or registers; the tests hold every key a source shows to be a row of KEYS.
_CUDA_KEYS = (
    "backend",
    "release_lock_on_cudamalloc",
    "release_lock_on_hipmalloc",
    "pinned_use_cuda_host_register",
    "pinned_use_hip_host_register",
    "pinned_num_register_threads",
    "pinned_reserve_segment_size_mb",
    "graph_capture_record_stream_reuse",
)
_COMMON_KEYS = (
    "max_split_size_mb",
    "max_non_split_rounding_mb",
    "garbage_collection_threshold",
    "roundup_power2_divisions",
    "expandable_segments",
    "pinned_use_background_threads",
)
SOURCES_READ: tuple[SourceRead, ...] = (
    SourceRead("01f9ef32eae5ef513002dd44902c23cbe6be3aae", "c10/cuda/CUDAAllocatorConfig.cpp",
               None, _CUDA_KEYS),
    SourceRead("b944315b93d36f842ef94d67a041371993234a74", "c10/cuda/CUDAAllocatorConfig.cpp",
               None, (*_CUDA_KEYS, "per_process_memory_fraction")),
    SourceRead("b42fb11650d1718ca81c6826b0a12247f94665fc", "c10/core/AllocatorConfig.h",
               None, ("large_segment_size_mb", *_COMMON_KEYS)),
    SourceRead("0ac716637f3258efcaf7fdfb851bdd520c9c1441", "c10/core/AllocatorConfig.cpp",
               None, _COMMON_KEYS),
    # the older AllocatorConfig.cpp: one parser for all keys, "Unrecognized CachingAllocator
    # option" on any other
    SourceRead("065861fba7598880aa3216822742a1172d0a197c", "c10/core/AllocatorConfig.cpp",
               None, (*_COMMON_KEYS, *_CUDA_KEYS[:6])),
)  # fmt: skip
# The error on an unknown key changed with the split into CUDAAllocatorConfig: "Unrecognized key
# 'X' in CUDA allocator config." (01f9ef32, b944315b) instead of "Unrecognized CachingAllocator
# option: X" (065861fb and the older CUDACachingAllocator.cpp).
UNKNOWN_KEY_MESSAGES = ("Unrecognized key '", "Unrecognized CachingAllocator option: ")


def sources_read(key: str) -> tuple[SourceRead, ...]:
    """The stored upstream allocator files read that parse ``key``."""
    return tuple(s for s in SOURCES_READ if key in s.shows)


# Value syntax that came later than its key: (key, form) -> first release, source.
SYNTAX: dict[tuple[str, str], tuple[str, str]] = {
    ("roundup_power2_divisions", "list"): (
        "2.0",
        "pytorch#87290 (2022-10/11, '[256:1,512:2,>:4]' per-interval divisions)",
    ),
}

# Which variable the CUDA caching allocator takes its settings from, per release.
# PYTORCH_ALLOC_CONF is read from 2.9 (torch_env), but on 2.9.x the CUDA allocator still took its
# keys only from PYTORCH_CUDA_ALLOC_CONF: pytorch#183387 (2.9.1+cu128: expandable_segments via
# PYTORCH_ALLOC_CONF silently ignored), fixed by 2.11.0 (karpathy/autoresearch#588, measured).
CUDA_ALLOCATOR_VARIABLES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "PYTORCH_CUDA_ALLOC_CONF": ("1.10", ("1.8", "1.9"), "pytorch#44742"),
    "PYTORCH_ALLOC_CONF": ("2.11", ("2.10",), "pytorch#183387, karpathy/autoresearch#588"),
}
# Releases that print "PYTORCH_CUDA_ALLOC_CONF is deprecated, use PYTORCH_ALLOC_CONF instead":
# seen on 2.9.0 (Comfy-Org/ComfyUI#10386); "present only on 2.8 <= torch < 2.12"
# (PriorLabs/TabPFN#608); the message is absent from libc10.so of 2.13.0 and 2.14.1, where the old
# name is a plain alias (pytorch#167659 kept it).
DEPRECATION_WARNED = ("2.9", "2.10", "2.11")
DEPRECATION_UNSURE = ("2.8",)

# Keys the cudaMallocAsync backend ignores (torch warns "backend:cudaMallocAsync ignores
# max_split_size_mb, roundup_power2_divisions, and garbage_collect_threshold"; 2.14.1 libc10_cuda).
ASYNC_IGNORES = ("max_split_size_mb", "roundup_power2_divisions", "garbage_collection_threshold")
# backend:cudaMallocAsync needs a CUDA 11.4+ build and driver (c10/cuda/CUDAAllocatorConfig.cpp).
ASYNC_MIN_CUDA = "11.4"


def _answer(since: str | None, unsure: tuple[str, ...], torch_version: str | None) -> bool | None:
    if not in_range(torch_version):
        return None
    minor = torch_minor(torch_version)
    if minor in unsure:
        return None
    v = parse_version(minor)
    if since is None:
        return True if v >= parse_version(VERIFIED_IN) else None
    return v >= parse_version(since)


def accepts(key: str, torch_version: str | None) -> bool | None:
    """Does this torch release accept allocator key ``key``? None when the table cannot say."""
    row = KEYS.get(key)
    if row is None:
        return False if in_range(torch_version) else None
    return _answer(row.since, row.unsure, torch_version)


def accepts_syntax(key: str, form: str, torch_version: str | None) -> bool | None:
    """Does this release accept ``form`` ('list') for ``key``? True when no later syntax rule."""
    rule = SYNTAX.get((key, form))
    if rule is None:
        return accepts(key, torch_version)
    return _answer(rule[0], (), torch_version)


def cuda_allocator_reads(variable: str, torch_version: str | None) -> bool | None:
    """Does the CUDA caching allocator of this release take its settings from ``variable``?"""
    row = CUDA_ALLOCATOR_VARIABLES.get(variable)
    if row is None:
        return False if in_range(torch_version) else None
    return _answer(row[0], row[1], torch_version)


def warns_deprecated(torch_version: str | None) -> bool | None:
    """Does this release warn that PYTORCH_CUDA_ALLOC_CONF is deprecated?"""
    if not in_range(torch_version):
        return None
    minor = torch_minor(torch_version)
    if minor in DEPRECATION_UNSURE:
        return None
    return minor in DEPRECATION_WARNED
