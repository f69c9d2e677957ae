"""Which CUDA caching-allocator keys, value syntax and variables each torch release accepts.

``alloc_conf.KEYS`` is the key list of the newest release (2.13/2.14); this table says from which
release torch knows each key, so a setting that an older torch rejects ("Unrecognized
CachingAllocator option", raised at the first CUDA allocation) or a remedy that proposes a key
the examined torch does not know is caught. Bases as in ``torch_env``. Every key's first release
is the first wheel (torch_env.WHEELS: every minor from 1.8 to 2.13, read 2026-11-26 with
scripts/release_strings.py) whose libc10_cuda.so or libc10.so holds the key as a string of its
own, the key parser's argument; every later wheel holds it too (release_strings.json, held to
these rows by tests/test_release_wheels.py). Upstream pull requests, where traced, agree.
Releases a row cannot place are in ``unsure``; questions about them answer None.
"""

from __future__ import annotations

from dataclasses import dataclass

from .compat import parse_version, torch_minor
from .torch_env import SourceRead, first_in, in_range

CHECKED = "2026-11-24"


@dataclass(frozen=True)
class Key:
    name: str
    since: str | None  # first torch minor that accepts it; None: unknown before VERIFIED_IN
    source: str
    basis: str
    unsure: tuple[str, ...] = ()


VERIFIED_IN = "2.13"  # every key below is accepted by 2.13.0 and 2.14.1 (basis "wheel")
# Libraries whose strings hold the key parser's keys: libc10_cuda.so (CUDACachingAllocator.cpp,
# later CUDAAllocatorConfig.cpp) and, from 2.9, libc10.so (c10/core/AllocatorConfig.cpp).
SHIPPED_IN = ("libc10",)
_CUDA_LIB = "torch/lib/libc10_cuda.so"


def _key(name: str, since: str, member: str = _CUDA_LIB, also: str = "") -> Key:
    """A key whose first release is the first wheel whose ``member`` holds it (the wheels of
    every minor from 1.8 to 2.13, torch_env.WHEELS; tests/test_release_wheels.py)."""
    return Key(name, since, first_in(since, member) + (f"; {also}" if also else ""), "wheel")


KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        _key("max_split_size_mb", "1.10", also="pytorch#44742 (2021-01/02)"),
        _key(
            "roundup_power2_divisions",
            "1.12",
            also="pytorch#74213 (2022-03-15, 'Better use of blocks with rounding')",
        ),
        _key("garbage_collection_threshold", "1.12", also="absent from 1.11.0"),
        _key(
            "backend",
            "2.0",
            also="pytorch#82682 (2022-08, cudaMallocAsync backend); absent from 1.13.1",
        ),
        _key("expandable_segments", "2.1", also="pytorch#96995 (2023-04, 'Expandable blocks')"),
        _key(
            "release_lock_on_cudamalloc",
            "2.2",
            also="pytorch#108367 (2023-08-31); ROCm/pytorch#1304 (2023-10-24) shows "
            "'Unrecognized CachingAllocator option: release_lock_on_cudamalloc' on a 2.1 branch",
        ),
        _key("pinned_use_cuda_host_register", "2.2", also="pytorch#108488 (2023-09/10)"),
        _key("pinned_num_register_threads", "2.2", also="pytorch#108488 (2023-09/10)"),
        # the HIP spellings are parsed by the CUDA build's parser too
        _key("release_lock_on_hipmalloc", "2.2"),
        _key("pinned_use_hip_host_register", "2.2"),
        _key("max_non_split_rounding_mb", "2.6", also="pytorch#136174 (2024-09-16)"),
        _key("pinned_use_background_threads", "2.6"),
        _key("graph_capture_record_stream_reuse", "2.9"),
        _key("pinned_reserve_segment_size_mb", "2.10", also="pytorch#163780 (2025-09-30)"),
        _key("per_process_memory_fraction", "2.10"),
        _key("large_segment_size_mb", "2.11", "torch/lib/libc10.so"),
        _key("pinned_free_catch_all", "2.12"),
        _key("throw_on_cudamalloc_oom", "2.12"),
        # pytorch#171662 (2026-01) missed the 2.11 and 2.12 branches: absent from both wheels
        _key("pinned_max_round_threshold_mb", "2.13", "torch/lib/libc10.so"),
        _key("pinned_max_cached_size_mb", "2.13", "torch/lib/libc10.so"),
    )
}

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
# PYTORCH_ALLOC_CONF silently ignored). The release headers show where that changed:
# torch/include/c10/cuda/CUDAAllocatorConfig.h of torch 2.9.1 (CUDAAllocatorConfig::instance)
# reads only PYTORCH_CUDA_ALLOC_CONF (and PYTORCH_HIP_ALLOC_CONF under USE_ROCM); the same header
# of 2.10.0 falls back to PYTORCH_ALLOC_CONF when PYTORCH_CUDA_ALLOC_CONF is unset, and
# libc10_cuda.so holds PYTORCH_ALLOC_CONF from 2.10 (release_strings.json; checked 2026-11-26).
CUDA_ALLOCATOR_VARIABLES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "PYTORCH_CUDA_ALLOC_CONF": ("1.10", (), first_in("1.10", _CUDA_LIB)),
    "PYTORCH_ALLOC_CONF": (
        "2.10",
        (),
        "pytorch#183387; c10/cuda/CUDAAllocatorConfig.h of " + first_in("2.10", _CUDA_LIB),
    ),
}
# Releases that print "PYTORCH_CUDA_ALLOC_CONF is deprecated, use PYTORCH_ALLOC_CONF instead":
# seen on 2.9.0 (Comfy-Org/ComfyUI#10386). The message is in torch/lib/libc10.so of the 2.9.1
# wheel only: absent from every other wheel from 1.8 to 2.13 (release_strings.json, 2026-11-26),
# so PriorLabs/TabPFN#608's "2.8 <= torch < 2.12" overstates it; from 2.10 the old name is a plain
# alias (pytorch#167659 kept it).
DEPRECATION_WARNED = ("2.9",)
DEPRECATION_UNSURE: tuple[str, ...] = ()

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
