"""TD003: a `torch.cuda` call that raises on a CPU-only torch, outside any device guard."""

from __future__ import annotations

import ast
import re

from ..context import Check, Context

# These initialise CUDA and raise 'Torch not compiled with CUDA enabled' (or 'No CUDA GPUs
# are available') without one; is_available, device_count, manual_seed, empty_cache and the
# memory counters do not.
RAISING = frozenset([
    "synchronize", "set_device", "current_device", "get_device_name", "get_device_properties",
    "get_device_capability", "mem_get_info", "Stream", "current_stream", "default_stream",
    "set_stream", "ipc_collect", "init", "reset_peak_memory_stats",
])  # fmt: skip


MULTI_GPU = re.compile(r"nccl|FullyShardedDataParallel")


def on_call(ctx: Context, node: ast.Call) -> None:
    name = ctx.torch_call(node)
    if ctx.guard or name is None or not name.startswith("cuda."):
        return
    if MULTI_GPU.search(ctx.text):
        return  # NCCL / FSDP (multi-GPU) code: CUDA-only by design, like the rest of the file
    fn = name[len("cuda.") :]
    if fn not in RAISING:
        return
    caught = "inside a try whose handler catches the error" if ctx.catch_all else None
    ctx.report(
        "TD003",
        node,
        f"`torch.cuda.{fn}()` raises where CUDA is absent (CPU-only torch, Macs)",
        "call it only under `if torch.cuda.is_available():` (or use torch.accelerator)",
        confidence="low" if caught else "high",
        why=caught,
    )


CHECK = Check(rules=("TD003",), words=("cuda",), calls=RAISING, on_call=on_call)
