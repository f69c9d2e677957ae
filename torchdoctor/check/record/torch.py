"""What the torch probe saw: the build, CUDA/ROCm/XPU/MPS devices, cuDNN, loaded libraries."""

from __future__ import annotations

from typing import Annotated

from torchdoctor.typed_json import Record, Required

from .base import Bool, Capability, Int, MajorMinor, Num, ProbeError, Str, record


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
