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


def _device(nv: Any, index: int) -> dict[str, Any]:
    h = nv.nvmlDeviceGetHandleByIndex(index)
    mem = _opt(lambda: nv.nvmlDeviceGetMemoryInfo(h))
    cap = _opt(lambda: nv.nvmlDeviceGetCudaComputeCapability(h))
    mig = _opt(lambda: nv.nvmlDeviceGetMigMode(h))
    return {
        "index": index,
        "name": _opt(lambda: nv.nvmlDeviceGetName(h)),
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
    }


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
        return {
            "status": "ok",
            "driver_version": _opt(nv.nvmlSystemGetDriverVersion),
            "cuda_driver_version": _opt(nv.nvmlSystemGetCudaDriverVersion),
            "device_count": count,
            "devices": [_device(nv, i) for i in range(count)],
        }
    except Exception as exc:  # noqa: BLE001
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    finally:
        _opt(nv.nvmlShutdown)
