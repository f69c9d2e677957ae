"""The host: cgroup limits, the NVIDIA kernel driver's files, CPUs."""

from __future__ import annotations

from torchdoctor.typed_json import Record

from .base import Bool, Int, Num, Str, record


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
class OpenFiles(Record):
    """RLIMIT_NOFILE: -1 is unlimited; None where unknown (Windows, older facts)."""

    soft: Int
    hard: Int


@record
class PciGpu(Record):
    """A display controller on the PCI bus (sysfs) and the kernel driver bound to it."""

    address: Str
    vendor: Str  # 0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel
    device: Str
    pci_class: Str  # 0x030000 VGA, 0x030200 3D controller
    driver: Str  # None: no kernel driver serves the device
    vram_bytes: Int  # amdgpu's mem_info_vram_total; None elsewhere


@record
class Iommu(Record):
    """The IOMMU as the kernel set it up: GPU peer-to-peer traffic it translates breaks NCCL."""

    cmdline: list[str] | None  # only the iommu-related options of /proc/cmdline
    units: list[str] | None  # /sys/class/iommu entries (dmar0, ivhd0): none when it is off


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
    iommu: Iommu
    cpu: HostCpu
    open_files: OpenFiles
    pci_gpus: list[PciGpu] | None  # None: not read (no sysfs, older facts)
    dev_kfd: Bool  # /dev/kfd, the ROCm compute node
    # LD_LIBRARY_PATH entries holding torch's own libraries (a libtorch): None where not read
    ld_path_torch_libs: list[str] | None
