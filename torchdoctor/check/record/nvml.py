"""What NVML reports: the driver and each GPU, seen without a CUDA context."""

from __future__ import annotations

from typing import Annotated

from torchdoctor.typed_json import Record, Required, Version

from .base import Capability, Int, Str, record


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
