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
