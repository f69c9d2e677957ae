"""Smoke tests: run torch on every device and measure it. Imported by torch_probe.py (child only).

Each device is one stage (``smoke.cpu``, ``smoke.cuda:0`` …), so a device that hangs or kills the
process loses nothing measured on the devices before it; the parent reruns the rest in a new child.
Standard library plus torch only.
"""

from __future__ import annotations

import os
import signal
import statistics
import time

# Sizes per --smoke-size. quick stays well under a second of work per device.
SIZES = {
    "quick": {"matmul": 128, "conv": 16, "copy_mib": (4, 32), "repeats": 5, "block_mib": 64},
    "full": {
        "matmul": 1024,
        "conv": 128,
        "copy_mib": (4, 64, 256),
        "repeats": 15,
        "block_mib": 512,
    },
}

# Relative error allowed against the float64 CPU reference (max |a-b| / max |ref|). float32 on
# GPUs may use TF32 for matmul (10-bit mantissa), so its bound is TF32's, not FP32's.
TOLERANCE = {"float32": 5e-3, "float16": 2e-2, "bfloat16": 8e-2}
MIB = 1024 * 1024

# Test-only fault injection, "DEVICE=KIND[,DEVICE=KIND]" with KIND wrong|raise|hang|segv: how the
# tests prove that a bad device is reported and the others' results survive, without a bad GPU.
FAULT_ENV = "TORCHDOCTOR_TEST_SMOKE_FAULT"


def _fault(device: str) -> str | None:
    for item in os.environ.get(FAULT_ENV, "").split(","):
        dev, _, kind = item.partition("=")
        if dev == device:
            return kind
    return None


def accelerators(torch) -> list[str]:
    devs: list[str] = []
    if torch.cuda.is_available():
        devs += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devs.append("mps")
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        devs += [f"xpu:{i}" for i in range(xpu.device_count())]
    return devs


def _sync(torch, device: str) -> None:
    kind = device.split(":")[0]
    if kind == "cuda":
        torch.cuda.synchronize(device)
    elif kind == "mps":
        torch.mps.synchronize()
    elif kind == "xpu":
        torch.xpu.synchronize(device)


def _rel_err(torch, got, ref) -> float:
    diff = (got.detach().to("cpu", torch.float64) - ref).abs().max().item()
    scale = ref.abs().max().item() or 1.0
    return diff / scale


def _dtypes(torch, device: str) -> list[str]:
    if device == "cpu":
        return ["float32"]
    out = ["float32", "float16"]
    kind = device.split(":")[0]
    if (kind == "cuda" and torch.cuda.is_bf16_supported()) or kind in ("mps", "xpu"):
        out.append("bfloat16")
    return out


def compute(torch, device: str, size: dict) -> dict:
    """matmul and conv2d per dtype against a float64 CPU reference."""
    gen = torch.Generator().manual_seed(0)
    n, c = size["matmul"], size["conv"]
    a = torch.randn(n, n, generator=gen, dtype=torch.float64)
    b = torch.randn(n, n, generator=gen, dtype=torch.float64)
    x = torch.randn(2, 3, c, c, generator=gen, dtype=torch.float64)
    w = torch.randn(8, 3, 3, 3, generator=gen, dtype=torch.float64)
    ref_mm = a @ b
    ref_conv = torch.nn.functional.conv2d(x, w, padding=1)
    results = {}
    fault = _fault(device)
    for name in _dtypes(torch, device):
        dt = getattr(torch, name)
        t0 = time.perf_counter()
        try:
            if fault == "raise":
                raise RuntimeError(f"injected fault on {device}")
            mm = a.to(device, dt) @ b.to(device, dt)
            conv = torch.nn.functional.conv2d(x.to(device, dt), w.to(device, dt), padding=1)
            _sync(torch, device)
            if fault == "wrong":
                mm = mm + 1
        except Exception as exc:  # noqa: BLE001 - an unsupported dtype is a result, not a crash
            results[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
            continue
        errs = {"matmul": _rel_err(torch, mm, ref_mm), "conv2d": _rel_err(torch, conv, ref_conv)}
        ok = all(e <= TOLERANCE[name] for e in errs.values())
        results[name] = {
            "ok": ok,
            "matmul_rel_err": errs["matmul"],
            "conv2d_rel_err": errs["conv2d"],
            "tolerance": TOLERANCE[name],
            "ms": round((time.perf_counter() - t0) * 1000, 3),
        }
    return {"dtypes": results, "ok": all(r["ok"] for r in results.values())}


def _median_time(torch, device: str, fn, repeats: int) -> float:
    fn()  # warm-up, excluded
    _sync(torch, device)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        _sync(torch, device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _bandwidth(torch, device: str, variants: list, mib: int, repeats: int) -> dict:
    """GB/s of H2D and D2H copies of ``mib`` MiB from each (label, host tensor) variant."""
    dev = torch.empty(mib * MIB, dtype=torch.uint8, device=device)
    row = {}
    for label, host in variants:
        h2d = _median_time(torch, device, lambda h=host: dev.copy_(h, non_blocking=True), repeats)
        d2h = _median_time(torch, device, lambda h=host: h.copy_(dev, non_blocking=True), repeats)
        row[f"h2d_{label}_gbps"] = round(mib * MIB / h2d / 1e9, 3)
        row[f"d2h_{label}_gbps"] = round(mib * MIB / d2h / 1e9, 3)
    return row


def transfer(torch, device: str, size: dict) -> dict:
    """Bit-exact round trips and H2D/D2H bandwidth, pinned and pageable."""
    out: dict = {"sizes": {}}
    known = torch.arange(1 << 16, dtype=torch.int32)
    pin_ok = device.startswith("cuda")
    out["roundtrip_pageable_exact"] = bool(torch.equal(known.to(device).cpu(), known))
    if pin_ok:
        out["roundtrip_pinned_exact"] = bool(
            torch.equal(known.pin_memory().to(device).cpu(), known)
        )
    for mib in size["copy_mib"]:
        host = torch.empty(mib * MIB, dtype=torch.uint8)
        variants = [("pageable", host)] + ([("pinned", host.pin_memory())] if pin_ok else [])
        out["sizes"][f"{mib}MiB"] = _bandwidth(torch, device, variants, mib, size["repeats"])
    largest = out["sizes"][f"{size['copy_mib'][-1]}MiB"]
    out.update({k: v for k, v in largest.items()})  # headline figures: the largest copy
    return out


def peer_copy(torch, src: str, dst: str, size: dict) -> dict:
    """GPU-to-GPU copy: exactness and bandwidth of the largest size."""
    mib = size["copy_mib"][-1]
    a = torch.arange(mib * MIB // 4, dtype=torch.int32, device=src)
    b = torch.empty_like(a, device=dst)
    secs = _median_time(torch, dst, lambda: b.copy_(a), size["repeats"])
    return {
        "exact": bool(torch.equal(b.cpu(), a.cpu())),
        "gbps": round(mib * MIB / secs / 1e9, 3),
        "p2p_access": bool(torch.cuda.can_device_access_peer(int(src[5:]), int(dst[5:]))),
    }


def _memory_cycle(torch, device: str, size: dict, snap, empty_cache, returned_of) -> dict:
    """synchronize latency; allocate, free and empty_cache a known block, memory at each step."""
    sync_s = _median_time(torch, device, lambda: None, max(size["repeats"] * 4, 20))
    steps = {"before": snap()}
    block = torch.empty(size["block_mib"] * MIB, dtype=torch.uint8, device=device)
    steps["after_alloc"] = snap()
    del block
    steps["after_free"] = snap()
    t0 = time.perf_counter()
    empty_cache()
    _sync(torch, device)
    empty_s = time.perf_counter() - t0
    steps["after_empty_cache"] = snap()
    return {
        "sync_us": round(sync_s * 1e6, 2),
        "empty_cache_us": round(empty_s * 1e6, 2),
        "block_mib": size["block_mib"],
        "returned_mib": round(returned_of(steps) / MIB, 2),
        **steps,
    }


def cuda_memory(torch, device: str, size: dict) -> dict:
    idx = int(device.split(":")[1])
    cuda = torch.cuda

    def snap() -> dict:
        return {
            "allocated_bytes": cuda.memory_allocated(idx),
            "reserved_bytes": cuda.memory_reserved(idx),
            "device_free_bytes": cuda.mem_get_info(idx)[0],
        }

    def returned(steps: dict) -> int:
        # What the driver got back: its free memory after empty_cache minus after the free.
        return (
            steps["after_empty_cache"]["device_free_bytes"]
            - steps["after_free"]["device_free_bytes"]
        )

    return _memory_cycle(torch, device, size, snap, cuda.empty_cache, returned)


def mps_memory(torch, size: dict) -> dict:
    mps = torch.mps

    def snap() -> dict:
        return {"driver_allocated_bytes": mps.driver_allocated_memory()}

    def returned(steps: dict) -> int:
        key = "driver_allocated_bytes"
        return steps["after_free"][key] - steps["after_empty_cache"][key]

    return _memory_cycle(torch, "mps", size, snap, mps.empty_cache, returned)


def device_smoke(device: str, size_name: str) -> dict:
    """Everything measured on one device; each part fails on its own without losing the rest."""
    import torch

    size = SIZES[size_name]
    result: dict = {"device": device}
    fault = _fault(device)
    if fault:
        result["test_fault_injected"] = fault  # never mistaken for a real device's result
    if fault == "hang":
        time.sleep(3600)
    elif fault == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    parts = [("compute", lambda: compute(torch, device, size))]
    if device != "cpu":
        parts.append(("transfer", lambda: transfer(torch, device, size)))
    if device.startswith("cuda"):
        parts.append(("memory", lambda: cuda_memory(torch, device, size)))
    elif device == "mps":
        parts.append(("memory", lambda: mps_memory(torch, size)))
    for name, fn in parts:
        try:
            result[name] = fn()
        except Exception as exc:  # noqa: BLE001 - one failing part must not hide the others
            result[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:1000]}
    return result


def peer_pairs(devices: list[str]) -> list[tuple[str, str]]:
    cuda = [d for d in devices if d.startswith("cuda")]
    return [(cuda[i], cuda[i + 1]) for i in range(len(cuda) - 1)]


def run(stage, emit, size_name: str, only: list[str] | None = None) -> None:
    """Announce the smoke phase, then one stage per device (and per GPU pair)."""
    import torch

    planned = ["cpu", *accelerators(torch)] if only is None else only
    emit({"event": "phase", "phase": "smoke", "devices": planned, "size": size_name})
    for device in planned:
        stage(f"smoke.{device}", device_smoke, device, size_name)
    if only is None:
        for src, dst in peer_pairs(planned):
            stage(
                f"smoke.peer.{src}>{dst}",
                lambda s=src, d=dst: peer_copy(torch, s, d, SIZES[size_name]),
            )
