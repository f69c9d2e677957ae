"""NVML facts: the driver and the GPUs as the driver sees them, without a CUDA context.

This is how a GPU is seen even when torch cannot see it (CPU wheel, driver too old).
NVML missing is a normal state (no NVIDIA driver), recorded as ``status: unavailable``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _s(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


def _opt(fn: Callable[[], Any]) -> Any:
    """One optional NVML query: unsupported on this GPU or driver is None, not an error."""
    try:
        return _s(fn())
    except Exception:  # noqa: BLE001 - pynvml raises many NVMLError subclasses
        return None


# NVML's constants, spelled here: some pynvml releases define a few of them wrongly (a tuple).
UNCORRECTED, VOLATILE, AGGREGATE = 1, 0, 1  # memory error type, ECC counter types
P2P_READ = 0  # NVML_P2P_CAPS_INDEX_READ
P2P_STATUS = {
    0: "ok",
    1: "chipset-not-supported",
    2: "gpu-not-supported",
    3: "topology-not-supported",
    4: "disabled-by-regkey",
    5: "not-supported",
    6: "unknown",
}
MAX_NVLINKS = 18  # the most any GPU has (H100 SXM)
MAX_P2P_GPUS = 8  # pairs asked about: 28 at most, a few microseconds each


def is_lost(exc: BaseException) -> bool:
    """NVML_ERROR_GPU_IS_LOST (15): the GPU stopped answering on the bus (Xid 79)."""
    return getattr(exc, "value", None) == 15 or "GPU is lost" in str(exc)


def _ecc(nv: Any, h: Any) -> dict[str, Any]:
    """Uncorrectable memory errors and what the driver did about them; None where unsupported
    (consumer GPUs, ECC off)."""
    rows = _opt(lambda: nv.nvmlDeviceGetRemappedRows(h))
    remap = (
        dict(zip(("corrected", "uncorrected", "pending", "failure"), rows, strict=False))
        if rows
        else None
    )
    return {
        "volatile_uncorrected": _opt(
            lambda: nv.nvmlDeviceGetTotalEccErrors(h, UNCORRECTED, VOLATILE)
        ),
        "aggregate_uncorrected": _opt(
            lambda: nv.nvmlDeviceGetTotalEccErrors(h, UNCORRECTED, AGGREGATE)
        ),
        "retired_pages_pending": _opt(lambda: nv.nvmlDeviceGetRetiredPagesPendingStatus(h)),
        "remapped_rows": remap,
    }


def _nvlinks(nv: Any, h: Any) -> int | None:
    """Active NVLinks; None where the GPU has none to ask about."""
    active = 0
    for link in range(MAX_NVLINKS):
        state = _opt(lambda link=link: nv.nvmlDeviceGetNvLinkState(h, link))
        if state is None:
            return active if link else None
        active += state == 1
    return active


def _lost_device(index: int, exc: BaseException) -> dict[str, Any]:
    return {"index": index, "error": f"{type(exc).__name__}: {exc}", "lost": is_lost(exc)}


def _device(nv: Any, index: int) -> dict[str, Any]:
    try:
        h = nv.nvmlDeviceGetHandleByIndex(index)
        name = _s(nv.nvmlDeviceGetName(h))
    except Exception as exc:  # noqa: BLE001 - a GPU that does not answer is a fact, not a crash
        return _lost_device(index, exc)
    mem = _opt(lambda: nv.nvmlDeviceGetMemoryInfo(h))
    cap = _opt(lambda: nv.nvmlDeviceGetCudaComputeCapability(h))
    mig = _opt(lambda: nv.nvmlDeviceGetMigMode(h))
    return {
        "index": index,
        "name": name,
        "uuid": _opt(lambda: nv.nvmlDeviceGetUUID(h)),
        "serial": _opt(lambda: nv.nvmlDeviceGetSerial(h)),
        "pci_bus_id": _opt(lambda: nv.nvmlDeviceGetPciInfo(h).busId),
        "capability": list(cap) if cap else None,
        "memory_total_bytes": getattr(mem, "total", None),
        "memory_used_bytes": getattr(mem, "used", None),
        "pcie": {
            "gen_current": _opt(lambda: nv.nvmlDeviceGetCurrPcieLinkGeneration(h)),
            "gen_max": _opt(lambda: nv.nvmlDeviceGetMaxPcieLinkGeneration(h)),
            "width_current": _opt(lambda: nv.nvmlDeviceGetCurrPcieLinkWidth(h)),
            "width_max": _opt(lambda: nv.nvmlDeviceGetMaxPcieLinkWidth(h)),
        },
        "mig_mode": mig[0] if isinstance(mig, (list, tuple)) else None,
        "ecc": _ecc(nv, h),
        "nvlink_active": _nvlinks(nv, h),
    }


def _p2p(nv: Any, devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the driver says about peer-to-peer reads between each pair of GPUs."""
    if len(devices) < 2:
        return []
    handles = {}
    for d in devices[:MAX_P2P_GPUS]:
        h = _opt(lambda d=d: nv.nvmlDeviceGetHandleByIndex(d["index"]))
        if h is not None and not d.get("error"):
            handles[d["index"]] = h
    pairs = []
    for a in handles:
        for b in handles:
            if a < b:
                code = _opt(
                    lambda a=a, b=b: nv.nvmlDeviceGetP2PStatus(handles[a], handles[b], P2P_READ)
                )
                pairs.append(
                    {"a": a, "b": b, "read": P2P_STATUS.get(code) if code is not None else None}
                )
    return pairs


def gather() -> dict[str, Any]:
    try:
        import pynvml as nv
    except Exception as exc:  # noqa: BLE001 - a broken binding is still just "no NVML"
        return {"status": "unavailable", "error": f"pynvml not importable: {exc}"}
    try:
        nv.nvmlInit()
    except Exception as exc:  # noqa: BLE001
        name = type(exc).__name__
        # LibraryNotFound / DriverNotLoaded mean "no NVIDIA driver here", which is normal.
        return {"status": "unavailable", "error": f"{name}: {exc}"}
    try:
        count = nv.nvmlDeviceGetCount()
        devices = [_device(nv, i) for i in range(count)]
        return {
            "status": "ok",
            "driver_version": _opt(nv.nvmlSystemGetDriverVersion),
            "cuda_driver_version": _opt(nv.nvmlSystemGetCudaDriverVersion),
            "device_count": count,
            "devices": devices,
            "p2p": _p2p(nv, devices),
        }
    except Exception as exc:  # noqa: BLE001
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    finally:
        _opt(nv.nvmlShutdown)
