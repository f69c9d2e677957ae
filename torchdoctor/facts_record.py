"""The facts record, typed: the one definition of what torchdoctor knows about a machine.

The probes write JSON (they run in the examined interpreter, which need not have torchdoctor);
``gather`` and ``--facts FILE`` both turn that JSON into a ``Facts`` record here, checks read it
as attributes (``facts.torch.build.cuda``), a misspelt field is an AttributeError in the test
suite instead of a silent None, and ``schema/facts.schema.json`` is generated from these classes
(``python -m torchdoctor.facts_record``; a test keeps the file in step).

Field conventions (see typed_json): scalars are ``X | None`` (absent or unreadable reads None);
objects, lists and maps read empty when absent; ``X | None`` on an object or list keeps "absent"
apart from "empty" where a check needs that (e.g. "the probe never looked").
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Annotated, Any

from .typed_json import Count, Record, Required, ShapeError, Version, empty, load, schema

__all__ = ["Facts", "ShapeError", "empty_facts", "facts_schema", "load_facts"]

record = dataclass(frozen=True, kw_only=True)

Str = str | None
Int = int | None
Num = float | None  # JSON has one number type: an int is a number too
Bool = bool | None
MajorMinor = Annotated[str | None, Version(r"\d+\.\d+", "12.4")]  # CUDA versions checks compare
Capability = Annotated[list[int], Count(2)]  # [major, minor]


@record
class Collected(Record):
    """Who collected these facts, when, and from what."""

    at: Str
    torchdoctor_version: Str
    python: Str
    duration_s: Num
    constructed_by: Str
    source: Str  # "collect_env" when parsed from a pasted report
    carries: list[str] | None  # the fact paths a pasted report carries (None: a full gather)


@record
class Pcie(Record):
    gen_current: Int
    gen_max: Int
    width_current: Int
    width_max: Int


@record
class NvmlDevice(Record):
    index: Annotated[int, Required]
    name: Str
    uuid: Str
    serial: Str
    pci_bus_id: Str
    capability: Capability
    memory_total_bytes: Int
    memory_used_bytes: Int
    mig_mode: Int
    pcie: Pcie


@record
class Nvml(Record):
    """What the NVIDIA driver says through NVML, independent of torch."""

    status: Str
    error: Str
    driver_version: Annotated[str | None, Version(r"\d+", "580.65.06")]
    cuda_driver_version: Int
    device_count: Int
    devices: list[NvmlDevice]


@record
class Cgroup(Record):
    version: Int
    cpu_quota: Num
    memory_limit_bytes: Int


@record
class HostNvidia(Record):
    dev_nodes: list[str]
    proc_driver_version: Str
    uvm_loaded: Bool


@record
class HostCpu(Record):
    """The CPU block of a pasted report."""

    model: Str
    flags: list[str] | None


@record
class Host(Record):
    cpu_count_logical: Int
    cpu_count_physical: Int
    cpu_affinity_count: Int
    memory_total_bytes: Int
    memory_available_bytes: Int
    cgroup: Cgroup
    nvidia: HostNvidia
    cpu: HostCpu


@record
class Shadow(Record):
    """A torch.py, torch/ or namespace folder that ``import torch`` would find first."""

    path: Str
    kind: Str  # module | package | namespace
    via: Str


@record
class Cpu(Record):
    model: Str
    isa: list[str] | None  # None: the flags could not be read


@record
class Distro(Record):
    id: Str
    name: Str
    version_id: Str
    pretty_name: Str


@record
class Platform(Record):
    """The OS and the examined interpreter."""

    system: Str
    release: Str
    machine: Str
    python_version: Annotated[str, Required, Version(r"\d+\.\d+", "3.11.7")]
    python_implementation: Str
    python_bits: Int
    executable: Str
    prefix: Str
    base_prefix: Str
    in_venv: Bool
    conda_prefix: Str
    externally_managed: Str  # the EXTERNALLY-MANAGED marker's path (PEP 668)
    ensurepip: Bool
    torch_shadows: list[Shadow] | None  # None: the probe did not look
    wsl: Bool
    libc: Str
    glibc: Str
    distro: Distro
    cpu: Cpu
    jetson: Str
    conda_packages: dict[str, str] | None
    mac_ver: Str
    rosetta: Bool
    user_site: Str
    user_site_enabled: Bool
    os: Str  # the OS line of a pasted report (collect_env)


@record
class Distribution(Record):
    version: Annotated[str, Required]
    location: Str
    requires: list[str]


@record
class TorchDistribution(Record):
    version: Str
    location: Str


@record
class CondaPackage(Record):
    """A [conda] line of a pasted report: the channel says who installed it (pypi: pip)."""

    version: Str
    build: Str
    channel: Str


@record
class Packages(Record):
    """The installed distributions (pip's view) and the NVIDIA wheels beside torch."""

    distributions: dict[str, Distribution]
    conda: dict[str, CondaPackage]  # a pasted report's conda list
    torch_distributions: list[TorchDistribution]
    nvidia_wheels: dict[str, str]
    cuda_sizes: dict[str, float]


@record
class ProbeError(Record):
    type: Str
    message: Str
    traceback: Str


@record
class Build(Record):
    """How the installed torch was compiled."""

    variant: Annotated[str, Required]
    cuda: MajorMinor
    hip: Str
    cudnn: Int
    nccl: Str
    arch_list: list[str]
    cpu_capability: Str
    git_version: Str
    num_threads: Int
    num_interop_threads: Int
    cxx11_abi: Bool
    debug: Bool
    distributed: Bool
    gloo_available: Bool
    nccl_available: Bool
    mkl: Bool
    mkldnn: Bool
    openmp: Bool
    mps_built: Bool
    xpu_built: Bool


@record
class CudaDevice(Record):
    index: Annotated[int, Required]
    name: Str
    capability: Capability
    total_memory_bytes: Int
    multi_processor_count: Int
    uuid: Str
    gcn_arch_name: Str


@record
class Cuda(Record):
    available: Bool
    device_count: Int
    warnings: list[str]
    devices: list[CudaDevice]


@record
class DeviceMemory(Record):
    index: Annotated[int, Required]
    free_bytes: Int
    total_bytes: Int
    context_s: Num


@record
class CudaInit(Record):
    init_s: Num
    memory: list[DeviceMemory]


@record
class Mps(Record):
    available: Bool
    built: Bool


@record
class Node(Record):
    """/dev/kfd or a /dev/dri/renderD* node (ROCm and XPU need them readable and writable)."""

    path: Str
    exists: Bool
    char_device: Bool
    group: Str
    mode: Str
    rw: Bool
    error: Str


@record
class Nodes(Record):
    uid: Int
    groups: list[str]
    kfd: Node
    render: list[Node]


@record
class Rocm(Record):
    hip: Str
    hsa_override_gfx_version: Str
    nodes: Nodes


@record
class XpuDevice(Record):
    index: Int
    name: Str
    driver_version: Str
    total_memory_bytes: Int


@record
class Xpu(Record):
    available: Bool
    device_count: Int
    devices: list[XpuDevice]
    nodes: Nodes


@record
class Cudnn(Record):
    compiled: list[int]
    runtime: list[int]


@record
class LoadedLib(Record):
    path: Annotated[str, Required]
    realpath: Str
    component: Str
    origin: Str
    version: Str
    wheel: Str


@record
class Preload(Record):
    path: Str
    component: Str


@record
class LibraryPathDir(Record):
    dir: Annotated[str, Required]
    real: Str
    exists: Bool
    libs: list[str]


@record
class WheelFiles(Record):
    libs: Int
    missing: list[str]
    version: Str


@record
class Libs(Record):
    """The shared libraries torch loaded, and where each came from."""

    platform: Str
    torch_dir: Str
    maps_available: Bool
    config: list[str]
    cudnn: Cudnn
    loaded: list[LoadedLib]
    ld_preload: list[Preload]
    ld_library_path: list[LibraryPathDir]
    nvidia_wheel_files: dict[str, WheelFiles]


@record
class Companion(Record):
    """torchvision, torchaudio, ... imported after torch: the import error is the diagnosis."""

    imported: Bool
    version: Str
    cuda_known: Bool
    cuda: Str
    error: ProbeError | None


@record
class Torch(Record):
    """The installed torch, from the probe child."""

    status: Str  # ok | missing | import_error | timeout | crashed | probe_failed | not_started
    version: Str
    file: Str
    import_s: Num
    warnings: list[str]
    error: ProbeError | None
    stage_errors: dict[str, ProbeError]
    build: Build
    cuda: Cuda
    cuda_init: CudaInit
    mps: Mps
    rocm: Rocm
    xpu: Xpu
    libs: Libs
    companions: dict[str, Companion]


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


@record
class TorchProbe(Record):
    status: Str
    message: Str
    unfinished_stage: Str
    phase: Str
    returncode: Int
    signal: Str
    stderr_tail: Str
    garbage_lines: Int
    duration_s: Num
    stage_durations: dict[str, float]


@record
class Probe(Record):
    torch: TorchProbe


@record
class Tool(Record):
    path: Str
    name: Str
    ok: Bool
    exists: Bool
    output: Str
    returncode: Int
    version: Str
    release: Str


@record
class CudaHome(Record):
    path: Str
    source: Str
    exists: Bool
    has_headers: Bool


@record
class Toolkit(Record):
    path: Str
    release: Annotated[str, Required, Version(r"\d+\.\d+", "12.4")]
    has_headers: Bool


@record
class Toolchain(Record):
    """Compilers for torch extensions: nvcc, the C++ compiler, ninja, CUDA_HOME."""

    status: Str
    error: Str
    nvcc: Tool
    cxx: Tool
    ninja: Tool
    cuda_home: CudaHome
    rocm_home: Str
    toolkits: list[Toolkit]


@record
class Candidate(Record):
    source: Str
    python: Str
    torch: Str
    error: Str  # it did not answer (why)


@record
class Interpreter(Record):
    """Which Python was examined, and why that one."""

    python: Str
    source: Str
    reason: Str
    own: Str
    note: Str
    candidates: list[Candidate]


@record
class Evidence(Record):
    source: Str
    kind: Str


@record
class Shm(Record):
    path: Str
    exists: Bool
    mounted: Bool
    fs_type: Str
    source: Str
    size_bytes: Int
    free_bytes: Int


@record
class ContainerNvidia(Record):
    driver_libs: dict[str, str | None]  # None: the library was not found
    nvidia_smi: Str


@record
class Container(Record):
    detected: Bool
    kind: Str
    engine: Str
    evidence: list[Evidence]
    shm: Shm
    nvidia: ContainerNvidia


@record
class ReportEvidence(Record):
    """One line of torch's own words pasted with a report (paste_evidence), and what it says."""

    kind: Annotated[str, Required]
    line: Str
    at: Int  # line number in the pasted text
    device: Str
    capability: list[int]
    arch_list: list[str]
    driver_cuda: Str  # the CUDA version the driver supports, from "found version 10010"
    library: Str
    operator: Str
    error: Str
    code: Int
    macos_floor: Str
    torch_cuda: Str
    companion_cuda: Str


@record
class PastedReport(Record):
    """What a pasted report says beyond collect_env's fields."""

    evidence: list[ReportEvidence]


@record
class Facts(Record):
    """Everything torchdoctor observed about one machine and one Python environment."""

    facts_version: Int
    collected: Collected
    env: dict[str, str]  # only the variables torchdoctor reads (probes/host.py TORCH_ENV_VARS)
    nvml: Nvml
    host: Host
    platform: Platform
    packages: Packages
    torch: Torch
    smoke: Smoke
    probe: Probe
    toolchain: Toolchain
    interpreter: Interpreter
    container: Container
    report: PastedReport


def load_facts(data: Any, errors: list[str] | None = None) -> Facts:
    """The typed record of a parsed facts document; ShapeError names the first bad field (with
    an ``errors`` list: each field that does not fit reads as absent and is listed there)."""
    return load(Facts, data, errors=errors)


def empty_facts() -> Facts:
    return empty(Facts)


def facts_schema() -> dict[str, Any]:
    return schema(
        Facts,
        "torchdoctor facts",
        "https://github.com/torchdoctor/torchdoctor/blob/main/torchdoctor/schema/facts.schema.json",
    )


if __name__ == "__main__":  # regenerate schema/facts.schema.json
    sys.stdout.write(json.dumps(facts_schema(), indent=2) + "\n")
