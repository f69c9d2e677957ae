"""TD003: a `torch.cuda` call that raises on a CPU-only torch, outside any device guard."""

from __future__ import annotations

import ast
import re

from ..astutil import assigned_values, bindings, dotted, without_gpu
from ..context import Check, Context

# The torch.cuda calls that raise without CUDA: 'Torch not compiled with CUDA enabled' on a
# CPU-only torch (every Mac), 'No CUDA GPUs are available' on a CUDA torch with no GPU visible.
# Recorded by scripts/device_claims.py on torch 2.13 CPU and 2.11+cu130 with and without an H200
# (tests/facts/device_claims/); tests/test_device_claims.py keeps this list equal to that record.
# is_available, device_count, manual_seed, empty_cache and the memory counters do not raise.
# Event(), CUDAGraph() and nvtx raise on a CPU-only torch only, which is what a Mac has;
# utilization() reads NVML, which a Mac has not.
RAISING = frozenset([
    "synchronize", "set_device", "current_device", "get_device_name", "get_device_properties",
    "get_device_capability", "mem_get_info", "Stream", "current_stream", "default_stream",
    "set_stream", "ipc_collect", "init", "reset_peak_memory_stats", "get_rng_state",
    "set_per_process_memory_fraction", "memory_summary", "CUDAGraph", "graph", "Event",
    "is_current_stream_capturing", "utilization", "nvtx.range_push", "nvtx.range_pop",
    "nvtx.mark", "nvtx.range",
])  # fmt: skip

# Streams are CUDA machinery: code built on a side stream (a CUDA prefetcher) is written for
# CUDA; stylegan3's viz renderer and MiniGPT-4's prefetcher were lookalikes to their labellers.
# Events are not: StreamDiffusion's pipeline times every frame with `torch.cuda.Event`s while
# taking its device from the caller, and crashes on a CPU (sixteenth blind corpus).
MACHINERY = frozenset([
    "Stream", "current_stream", "default_stream", "set_stream", "is_current_stream_capturing",
])  # fmt: skip

MULTI_GPU = re.compile(r"nccl|FullyShardedDataParallel")


def on_call(ctx: Context, node: ast.Call) -> None:
    if not isinstance(node.func, ast.Attribute):
        return  # `range(n)`, `init()`: the builtin or a local name, not torch.cuda's
    name = ctx.torch_call(node)
    if name is None or not name.startswith("cuda.") or ctx.guard:
        return
    if MULTI_GPU.search(ctx.text):
        return  # NCCL / FSDP (multi-GPU) code: CUDA-only by design, like the rest of the file
    fn = name[len("cuda.") :]
    if fn not in RAISING:
        return
    low_why = "inside a try whose handler catches the error" if ctx.catch_all else None
    if not low_why and _given_the_fallback(ctx, node):
        ctx.report(
            "TD003",
            node,
            f"`torch.cuda.{fn}()` is given the device this file picks with a CPU fallback: "
            "where CUDA is absent that device is the CPU, and the call raises",
            "call it only under `if torch.cuda.is_available():` (or use torch.accelerator)",
            why="the argument is the file's own CUDA-or-CPU pick",
            proven=True,
        )
        return
    if not low_why and ctx.falls_back_to_cpu and _one_gpu_or_none(ctx):
        ctx.report(
            "TD003",
            node,
            f"`torch.cuda.{fn}()` in a branch of a GPU count that also runs with no GPU: on "
            "the CPU this file falls back to, the call raises",
            "test `torch.cuda.is_available()` before it (or use torch.accelerator)",
            why="the branch runs with no GPU, in a file that picks the CPU then",
            proven=True,
        )
        return
    if fn in MACHINERY:
        low_why = f"`torch.cuda.{fn}` is CUDA machinery: the code built on it is written for CUDA"
    ctx.report(
        "TD003",
        node,
        f"`torch.cuda.{fn}()` raises where CUDA is absent (CPU-only torch, Macs)",
        "call it only under `if torch.cuda.is_available():` (or use torch.accelerator)",
        **(
            {"confidence": "low", "why": low_why}
            if low_why
            else ctx.written_for_its_machine(f"`torch.cuda.{fn}()`")
        ),
    )


def _one_gpu_or_none(ctx: Context) -> bool:
    """Is the call in a branch a GPU count sends machines with none to: the `else:` of `if
    torch.cuda.device_count() > 1:` (or `> 0`), the body of `if torch.cuda.device_count() <
    2:`?"""
    return any(t is not None and without_gpu(t[0]) is t[1] for t in ctx.tests_around())


def _given_the_fallback(ctx: Context, node: ast.Call) -> bool:
    """`torch.cuda.set_device(device)` where every value the function (else the module) gives
    `device` is a pick that falls back to the CPU (`f"cuda:{n}" if torch.cuda.is_available()
    else "cpu"`): on the machines the fallback is for, the call raises (ValueError "Expected a
    cuda device, but got: cpu", or "Torch not compiled with CUDA enabled"). Sleep_pytorch's
    trainers, blind set 208."""
    arg = node.args[0] if node.args else None
    if not isinstance(arg, ast.Name):
        return False
    if any(arg.id in f.params() for f in ctx.funcs):
        return False  # a caller's device, whatever the module picks
    if ctx.cuda_only() is not None:
        return False  # the file stops without CUDA first (it asserts it, builds kernels…)
    scope = ctx.func.node if ctx.func is not None else ctx.module
    if not bindings(scope, arg.id):
        scope = ctx.module
    values = assigned_values(scope, arg.id)
    # every binding a plain assignment of a pick: not a loop variable, a `with … as`, a tuple
    return (
        bool(values)
        and len(values) == bindings(scope, arg.id)
        and all(map(_cpu_fallback_pick, values))
    )


def _cpu_fallback_pick(expr: ast.expr) -> bool:
    """`A if torch.cuda.is_available() else "cpu"` (or `torch.device(...)` of it)."""
    if isinstance(expr, ast.Call) and dotted(expr.func).endswith("device") and expr.args:
        expr = expr.args[0]
    if not (isinstance(expr, ast.IfExp) and "is_available" in ast.unparse(expr.test)):
        return False
    other = expr.orelse
    if isinstance(other, ast.Call) and dotted(other.func).endswith("device") and other.args:
        other = other.args[0]
    return isinstance(other, ast.Constant) and other.value == "cpu"


CHECK = Check(
    rules=("TD003",),
    words=("cuda",),
    calls=frozenset(n.rpartition(".")[2] for n in RAISING),  # the visitor keys calls by last name
    on_call=on_call,
)
