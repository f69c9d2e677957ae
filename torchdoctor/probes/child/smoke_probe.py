"""Smoke tests: run torch on every device and measure it. Imported by torch_probe.py (child only).

Each device is one stage (``smoke.cpu``, ``smoke.cuda:0`` …), so a device that hangs or kills the
process loses nothing measured on the devices before it; the parent reruns the rest in a new child.
Standard library plus torch only, and any Python torch supports (no zip(strict=): shapes are
compared before values are paired).
"""

# ruff: noqa: B905

from __future__ import annotations

import operator
import os
import random
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

# Inputs are integer matrices with entries in {-1, 0, 1} and at most EXACT_TERMS non-zero
# products per dot product, so every partial sum, in any order, is an integer of magnitude at
# most EXACT_TERMS: float32, TF32, float16 and bfloat16 (8 significant bits) all hold it exactly.
# A correct library returns exactly the answer, which is worked out here in pure Python — never
# with the library under test, so a BLAS or kernel that is wrong in every dtype still fails.
EXACT_TERMS = 256
MIB = 1024 * 1024

# Test-only fault injection, "DEVICE=KIND[,DEVICE=KIND]" with KIND wrong|library|raise|hang|segv:
# how the tests prove that a bad device (or a library wrong in every dtype) is reported and the
# others' results survive, without a bad GPU.
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


def _matrix(rows: int, cols: int, seed: int, stride: int = 1) -> list[list[int]]:
    """Fixed pseudo-random entries in {-1, 0, 1} (the standard library's generator, never the
    library's), zero unless (i + j) % stride == 0: with stride = ceil(n / EXACT_TERMS), no dot
    product of two such matrices has more than EXACT_TERMS non-zero terms."""
    rng = random.Random(seed)
    out = [rng.choices((-1, 0, 1), k=cols) for _ in range(rows)]
    if stride > 1:
        out = [
            [v if (i + j) % stride == 0 else 0 for j, v in enumerate(r)] for i, r in enumerate(out)
        ]
    return out


def _dot(x, y) -> int:
    return sum(map(operator.mul, x, y))


def _worst(pairs) -> float:
    """Largest |got - want| over (got, want) pairs; NaN or inf counts as infinitely wrong."""
    worst = 0.0
    for got, want in pairs:
        err = abs(got - want)
        worst = max(worst, err) if err == err and err != float("inf") else float("inf")
    return worst


def _edges(n: int) -> list[int]:
    """First, middle and last: the edges and the inside of every tiling a kernel may use."""
    return sorted({0, n // 2, n - 1})


def matmul_reference(a: list, b: list) -> dict:
    """What A·B must hold, in pure Python: every row sum A(B·1) and column sum (1ᵀA)B — exact
    checksums that catch any single wrong entry — and whole rows and columns at the edges."""
    n = len(a)
    b_row_sums = [sum(row) for row in b]
    a_col_sums = [sum(col) for col in zip(*a)]
    b_cols = list(zip(*b))
    return {
        "row_sums": [_dot(row, b_row_sums) for row in a],
        "col_sums": [_dot(a_col_sums, col) for col in b_cols],
        "rows": {i: [_dot(a[i], col) for col in b_cols] for i in _edges(n)},
        "cols": {j: [_dot(row, b_cols[j]) for row in a] for j in _edges(n)},
    }


def matmul_error(ref: dict, got: list) -> float:
    if len(got) != len(ref["row_sums"]) or any(len(r) != len(ref["col_sums"]) for r in got):
        return float("inf")
    pairs = list(zip(map(sum, got), ref["row_sums"]))
    pairs += zip(map(sum, zip(*got)), ref["col_sums"])
    for i, row in ref["rows"].items():
        pairs += zip(got[i], row)
    for j, col in ref["cols"].items():
        pairs += zip((r[j] for r in got), col)
    return _worst(pairs)


def conv_reference(x: list, w: list, rows: list[int]) -> dict:
    """conv2d (3x3 kernel, padding 1) in pure Python: {(image, out channel, row): [values]}."""
    size = len(x[0][0])
    out = {}
    for b, image in enumerate(x):
        for o, kernel in enumerate(w):
            for h in rows:
                line = [0] * size
                for c, plane in enumerate(image):
                    for dh in range(3):
                        r = h + dh - 1
                        if not 0 <= r < size:
                            continue
                        src, k = plane[r], kernel[c][dh]
                        padded = [0, *src, 0]
                        for col in range(size):
                            line[col] += _dot(padded[col : col + 3], k)
                out[(b, o, h)] = line
    return out


def conv_error(ref: dict, got: list) -> float:
    pairs = []
    for (b, o, h), line in ref.items():
        if len(got[b][o][h]) != len(line):
            return float("inf")
        pairs += zip(got[b][o][h], line)
    return _worst(pairs)


def _break_the_library(torch) -> None:
    """Test-only fault: matmul and conv2d 1% wrong in every dtype, float64 included (a BLAS or
    kernel library that is wrong everywhere), for the rest of this process."""
    if getattr(torch, "_torchdoctor_broken", False):
        return
    matmul, conv2d = torch.Tensor.__matmul__, torch.nn.functional.conv2d
    torch.Tensor.__matmul__ = lambda a, b: matmul(a, b) * 1.01
    torch.nn.functional.conv2d = lambda *args, **kw: conv2d(*args, **kw) * 1.01
    torch._torchdoctor_broken = True


def _dtypes(torch, device: str) -> list[str]:
    if device == "cpu":
        return ["float32"]
    out = ["float32", "float16"]
    kind = device.split(":")[0]
    if (kind == "cuda" and torch.cuda.is_bf16_supported()) or kind in ("mps", "xpu"):
        out.append("bfloat16")
    return out


def compute(torch, device: str, size: dict) -> dict:
    """matmul and conv2d per dtype on exact integer inputs, against pure-Python answers."""
    n, c = size["matmul"], size["conv"]
    stride = -(-n // EXACT_TERMS)
    a, b = _matrix(n, n, 1, stride), _matrix(n, n, 2, stride)
    x = [[_matrix(c, c, 10 + 3 * i + j, 1) for j in range(3)] for i in range(2)]
    w = [[_matrix(3, 3, 20 + 3 * o + j, 1) for j in range(3)] for o in range(8)]
    mm_ref, conv_ref = matmul_reference(a, b), conv_reference(x, w, _edges(c))
    results = {}
    fault = _fault(device)
    if fault == "library":
        _break_the_library(torch)
    for name in _dtypes(torch, device):
        dt = getattr(torch, name)
        t0 = time.perf_counter()
        try:
            if fault == "raise":
                raise RuntimeError(f"injected fault on {device}")
            mm = torch.tensor(a, dtype=dt, device=device) @ torch.tensor(b, dtype=dt, device=device)
            conv = torch.nn.functional.conv2d(
                torch.tensor(x, dtype=dt, device=device),
                torch.tensor(w, dtype=dt, device=device),
                padding=1,
            )
            _sync(torch, device)
            if fault == "wrong":
                mm = mm + 1
            got_mm = mm.to("cpu", torch.float64).tolist()
            got_conv = conv.to("cpu", torch.float64).tolist()
        except Exception as exc:  # noqa: BLE001 - an unsupported dtype is a result, not a crash
            results[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:500]}
            continue
        errs = {
            "matmul_max_err": matmul_error(mm_ref, got_mm),
            "conv2d_max_err": conv_error(conv_ref, got_conv),
        }
        results[name] = {
            "ok": all(e == 0 for e in errs.values()),
            **errs,
            "reference": "exact",
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
