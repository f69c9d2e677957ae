"""What NVML reports: the driver and each GPU, seen without a CUDA context."""

from __future__ import annotations

from typing import Annotated

from torchdoctor.typed_json import Record, Required, Version

from .base import Bool, Capability, Int, Str, record


@record
class Pcie(Record):
    gen_current: Int
    gen_max: Int
    width_current: Int
    width_max: Int


@record
class RemappedRows(Record):
    corrected: Int
    uncorrected: Int
    pending: Int  # 1: a remap waits for the GPU's reset
    failure: Int  # 1: no spare rows left, the GPU needs replacing


@record
class Ecc(Record):
    """Uncorrectable memory errors; None where the GPU has no ECC or it is off."""

    volatile_uncorrected: Int  # since the last driver load or GPU reset
    aggregate_uncorrected: Int  # over the GPU's life
    retired_pages_pending: Int  # 1: a page retirement waits for the GPU's reset (pre-Ampere)
    remapped_rows: RemappedRows  # Ampere and later


@record
class P2pPair(Record):
    """What the driver says about peer-to-peer reads between GPUs ``a`` and ``b``."""

    a: Int
    b: Int
    read: Str  # ok, not-supported, chipset-not-supported, disabled-by-regkey, ...


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
    ecc: Ecc
    nvlink_active: Int  # None where the GPU has no NVLink to ask about
    error: Str  # the GPU did not answer NVML (then the fields above are missing)
    lost: Bool  # NVML_ERROR_GPU_IS_LOST: fallen off the bus


@record
class Nvml(Record):
    """What the NVIDIA driver says through NVML, independent of torch."""

    status: Str
    error: Str
    driver_version: Annotated[str | None, Version(r"\d+", "580.65.06")]
    cuda_driver_version: Int
    device_count: Int
    devices: list[NvmlDevice]
    p2p: list[P2pPair]
