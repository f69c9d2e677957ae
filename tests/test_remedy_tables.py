"""The tables remedies are judged against: variables and allocator keys per torch release, driver
branch <-> GPU architecture, CUDA index <-> torch release. Each assertion is a published fact
(source in the table module) that a wrong edit of the table would break."""

from __future__ import annotations

import re

import pytest

from torchdoctor.data import alloc_conf, alloc_keys, compat, driver_archs, torch_env


def test_every_variable_row_has_a_source_and_known_vocabulary() -> None:
    for name, row in torch_env.VARIABLES.items():
        assert name == row.name and row.source.strip(), name
        assert row.basis in ("wheel", "pr", "report"), name
        assert row.scope in ("runtime", "build", "extension"), name
        for minor in (row.since, row.until, row.renamed_in, *row.unsure):
            assert minor is None or re.fullmatch(r"\d+\.\d+", minor), (name, minor)
        if row.renamed_to:
            assert row.renamed_to in torch_env.VARIABLES, name


def test_pytorch_alloc_conf_is_not_read_before_2_9() -> None:
    # ComfyUI#10386: the rename's warning first seen on 2.9.0; 2.7 predates AllocatorConfig.cpp.
    assert torch_env.reads("PYTORCH_ALLOC_CONF", "2.7.1+cu128") is False
    assert torch_env.reads("PYTORCH_ALLOC_CONF", "2.9.1") is True
    # absent from libc10.so of the 2.8.0 wheel (release_strings.json): no longer unsure
    assert torch_env.reads("PYTORCH_ALLOC_CONF", "2.8.0") is False
    assert torch_env.preferred_name("PYTORCH_CUDA_ALLOC_CONF", "2.4.0") is None
    assert torch_env.preferred_name("PYTORCH_CUDA_ALLOC_CONF", "2.13.0") == "PYTORCH_ALLOC_CONF"


def test_cuda_allocator_ignored_pytorch_alloc_conf_on_2_9_1() -> None:
    # pytorch#183387: expandable_segments via PYTORCH_ALLOC_CONF silently ignored on 2.9.1.
    assert alloc_keys.cuda_allocator_reads("PYTORCH_ALLOC_CONF", "2.9.1+cu128") is False
    assert alloc_keys.cuda_allocator_reads("PYTORCH_ALLOC_CONF", "2.11.0") is True
    # c10/cuda/CUDAAllocatorConfig.h of the 2.10.0 wheel falls back to PYTORCH_ALLOC_CONF
    assert alloc_keys.cuda_allocator_reads("PYTORCH_ALLOC_CONF", "2.10.0") is True
    assert alloc_keys.cuda_allocator_reads("PYTORCH_CUDA_ALLOC_CONF", "2.9.1") is True
    assert alloc_keys.cuda_allocator_reads("PYTORCH_CUDA_ALLOC_CONF", "2.14.1") is True


def test_deprecation_warning_only_on_the_releases_that_print_it() -> None:
    assert alloc_keys.warns_deprecated("2.9.0+cu130") is True  # ComfyUI#10386
    assert alloc_keys.warns_deprecated("2.13.0") is False  # absent from libc10.so 2.13.0
    assert alloc_keys.warns_deprecated("2.4.1") is False


def test_nccl_rename_happened_in_2_2_and_old_names_stay_read() -> None:
    # pytorch#114077; ray-project/ray#47292 quotes the deprecation warning.
    assert torch_env.reads("TORCH_NCCL_ASYNC_ERROR_HANDLING", "2.1.2") is False
    assert torch_env.reads("TORCH_NCCL_ASYNC_ERROR_HANDLING", "2.2.0") is True
    assert torch_env.reads("NCCL_ASYNC_ERROR_HANDLING", "2.14.1") is True
    assert torch_env.preferred_name("NCCL_ASYNC_ERROR_HANDLING", "2.1.2") is None
    assert torch_env.preferred_name("NCCL_ASYNC_ERROR_HANDLING", "2.5.1") == (
        "TORCH_NCCL_ASYNC_ERROR_HANDLING"
    )


def test_torch_use_cuda_dsa_is_a_build_option_only() -> None:
    assert torch_env.VARIABLES["TORCH_USE_CUDA_DSA"].scope == "build"
    assert torch_env.VARIABLES["TORCH_CUDA_ARCH_LIST"].scope == "extension"


def test_out_of_range_versions_are_unknown_not_guessed() -> None:
    assert torch_env.reads("PYTORCH_CUDA_ALLOC_CONF", "1.4.0") is None
    assert torch_env.reads("PYTORCH_CUDA_ALLOC_CONF", None) is None
    assert torch_env.reads("PYTORCH_CUDA_ALLOC_CONF", "9.0.0") is None
    assert alloc_keys.accepts("expandable_segments", "garbage") is None


def test_allocator_key_history() -> None:
    assert alloc_keys.accepts("expandable_segments", "2.0.1") is False  # pytorch#96995 -> 2.1
    assert alloc_keys.accepts("expandable_segments", "2.1.0") is True
    assert alloc_keys.accepts("backend", "1.12.1") is False  # pytorch#82682 -> 2.0
    assert alloc_keys.accepts("release_lock_on_cudamalloc", "2.1.2") is False  # ROCm/pytorch#1304
    assert alloc_keys.accepts("max_non_split_rounding_mb", "2.4.1") is False  # pytorch#136174
    assert alloc_keys.accepts("throw_on_cudamalloc_oom", "2.13.0") is True  # wheel strings
    assert alloc_keys.accepts("throw_on_cudamalloc_oom", "2.11.0") is False  # first in 2.12.1
    assert alloc_keys.accepts("throw_on_cudamalloc_oom", "2.12.1") is True
    assert alloc_keys.accepts("no_such_key", "2.13.0") is False
    assert alloc_keys.accepts_syntax("roundup_power2_divisions", "list", "1.13.1") is False
    assert alloc_keys.accepts_syntax("roundup_power2_divisions", "list", "2.0.0") is True


def test_allocator_tables_cover_the_parser_keys() -> None:
    # alloc_conf.KEYS is the newest release's list; every key has a history row, and the reverse.
    assert set(alloc_conf.KEYS) == set(alloc_keys.KEYS)
    for key, row in alloc_keys.KEYS.items():
        assert row.source.strip() and row.basis in ("wheel", "pr", "report"), key
        assert alloc_keys.accepts(key, "2.14.1") is True, key
    assert set(alloc_keys.ASYNC_IGNORES) <= set(alloc_keys.KEYS)


@pytest.mark.parametrize(
    ("driver_branch", "capability", "runs"),
    [
        (470, (3, 7), True),  # K80 on R470
        (495, (3, 7), False),  # Kepler dropped after R470
        (580, (6, 1), True),  # GTX 1080 on R580
        (590, (6, 1), False),  # R580 last for Pascal
        (590, (7, 0), False),  # V100
        (590, (7, 5), True),  # Turing stays
        (595, (12, 0), True),  # RTX 5090
        (390, (2, 1), True),
        (410, (2, 1), False),  # Fermi last R390
    ],
)
def test_driver_branch_support(driver_branch: int, capability: tuple[int, int], runs: bool) -> None:
    assert driver_archs.supports(driver_branch, capability) is runs


def test_last_branch_covering_a_mixed_box() -> None:
    box = [(8, 6), (6, 1)]  # RTX 3090 + GTX 1080 Ti
    assert driver_archs.last_branch_for(box) == 580
    assert driver_archs.dropped_by(590, box) == [1]
    assert driver_archs.last_branch_for([(8, 0), (9, 0)]) is None
    # CUDA 13.0 still runs on the last Pascal branch; CUDA 13.1's minimum does not.
    assert compat.driver_support("580.65.06", "13.0") == "full"
    assert driver_archs.branch(compat.TOOLKIT_MIN_DRIVER["13.1"]) == 590


@pytest.mark.parametrize(
    ("minor", "variants"),
    [
        # pytorch RELEASE.md "Release Compatibility Matrix" (checked 2026-11-24).
        ("1.13", ("cu116", "cu117")),
        ("2.0", ("cu117", "cu118")),
        ("2.1", ("cu118", "cu121")),
        ("2.4", ("cu118", "cu121", "cu124")),
        ("2.6", ("cu118", "cu124", "cu126")),
        ("2.7", ("cu118", "cu126", "cu128")),
        ("2.8", ("cu126", "cu128", "cu129")),
        ("2.9", ("cu126", "cu128", "cu130")),
    ],
)
def test_cuda_index_publishes_release(minor: str, variants: tuple[str, ...]) -> None:
    assert tuple(compat.RELEASES[minor].variants) == variants


def _source_rows(table: dict, sources_read, not_read: tuple[str, ...]) -> None:
    # Every row either cites an upstream source file read by commit, or is named as unread.
    for name in table:
        assert bool(sources_read(name)) != (name in not_read), name


def test_every_row_cites_a_source_read_or_is_listed_unread() -> None:
    _source_rows(torch_env.VARIABLES, torch_env.sources_read, _VARS_NOT_READ)
    _source_rows(alloc_keys.KEYS, alloc_keys.sources_read, _KEYS_NOT_READ)
    assert torch_env.NOT_READ_NOTE.strip()


def test_sources_read_are_real_commits_and_show_only_known_names() -> None:
    for table, sources in (
        (torch_env.VARIABLES, torch_env.SOURCES_READ),
        (alloc_keys.KEYS, alloc_keys.SOURCES_READ),
    ):
        for src in sources:
            assert re.fullmatch(r"[0-9a-f]{40}", src.commit), src
            assert src.path.startswith("c10/") and src.shows, src
            # No commit could be mapped to a tag; a release given must be a release minor.
            assert src.release is None or re.fullmatch(r"\d+\.\d+", src.release), src
            # A name the source reads that the table lacks would be a row the source adds.
            assert set(src.shows) <= set(table), src


def test_stored_allocator_config_reads_new_name_first_and_warns_on_old() -> None:
    # c10/core/AllocatorConfig.cpp at 0ac71663: PYTORCH_ALLOC_CONF, then the CUDA and HIP names.
    (src,) = torch_env.sources_read("PYTORCH_HIP_ALLOC_CONF")
    assert src.shows[0] == "PYTORCH_ALLOC_CONF"
    assert torch_env.reads("PYTORCH_ALLOC_CONF", "2.13.0") is True
    assert torch_env.preferred_name("PYTORCH_CUDA_ALLOC_CONF", "2.13.0") == "PYTORCH_ALLOC_CONF"
    # per_process_memory_fraction: parsed by CUDAAllocatorConfig.cpp at b944315b, not 01f9ef32.
    commits = {s.commit[:8] for s in alloc_keys.sources_read("per_process_memory_fraction")}
    assert commits == {"b944315b"}


# Rows with no upstream file read (search budget and time; see torch_env.NOT_READ_NOTE).
_KEYS_NOT_READ = (
    "pinned_max_round_threshold_mb",
    "pinned_max_cached_size_mb",
    "pinned_free_catch_all",
    "throw_on_cudamalloc_oom",
)
_VARS_NOT_READ = tuple(
    v for v in torch_env.VARIABLES if not v.endswith("_ALLOC_CONF")
)  # every variable but the three allocator-config names
