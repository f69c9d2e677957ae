"""The smoke test's results: compute per dtype, transfers, memory, peers."""

from __future__ import annotations

from typing import Any

from torchdoctor.typed_json import Record

from .base import Bool, Int, Num, Str, record


@record
class DtypeResult(Record):
    ok: Bool
    error: Str  # the dtype raised (e.g. not supported on this device)
    ms: Num
    reference: Str  # "exact": integer inputs against answers worked out in pure Python
    matmul_max_err: Num
    conv2d_max_err: Num
    tolerance: Num  # facts from before exact references: relative errors against float64
    matmul_rel_err: Num
    conv2d_rel_err: Num


@record
class Compute(Record):
    ok: Bool
    error: Str  # the part raised as a whole
    dtypes: dict[str, DtypeResult]


@record
class Transfer(Record):
    # A part that raised carries only ok/error; pinned figures exist on CUDA devices only.
    ok: Bool
    error: Str
    h2d_pinned_gbps: Num
    h2d_pageable_gbps: Num
    d2h_pinned_gbps: Num
    d2h_pageable_gbps: Num
    roundtrip_pinned_exact: Bool
    roundtrip_pageable_exact: Bool
    sizes: dict[str, Any]


@record
class Memory(Record):
    ok: Bool  # a part that raised carries only ok/error
    error: Str
    block_mib: Num
    returned_mib: Num
    sync_us: Num
    empty_cache_us: Num


@record
class SmokeDevice(Record):
    device: Str
    test_fault_injected: Str  # TORCHDOCTOR_TEST_SMOKE_FAULT: never a real device's result
    compute: Compute
    transfer: Transfer
    memory: Memory


@record
class SmokeFailure(Record):
    kind: Str
    type: Str
    message: Str


@record
class Peer(Record):
    """A GPU-to-GPU copy between two neighbouring CUDA devices."""

    exact: Bool
    gbps: Num
    p2p_access: Bool


@record
class Smoke(Record):
    """The cross-device smoke test: compute, transfers, synchronize and empty_cache."""

    enabled: Bool
    ran: Bool
    reason: Str
    size: Str
    reruns: Int
    planned: list[str]
    devices: dict[str, SmokeDevice]
    failures: dict[str, SmokeFailure]
    peers: dict[str, Peer]  # "cuda:0>cuda:1"
