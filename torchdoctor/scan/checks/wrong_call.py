"""TD009: a torch call that raises on every machine, whatever its devices.

`torch.autocast()` / `torch.amp.autocast()` need the device type, which `torch.cuda.amp.autocast()`
did not: code moved from one to the other without it raises "autocast.__init__() missing 1
required positional argument: 'device_type'" (TypeError) when the block is entered, on a GPU
too (MTGBench's trainer under --use_amp, blind set 255); `torch.cuda.amp.autocast` given one
raises too (set 270). MPS's memory and RNG functions live in
`torch.mps`, CUDA's in `torch.cuda`: `torch.backends.mps.empty_cache()` is an AttributeError
(MTGBench's run.py, set 255), and under `if hasattr(torch.backends.mps, "empty_cache"):` it
never runs, so the cache is never freed (text-generation-webui, set 2). Checked on torch
2.13.0; tests/test_scan_wrong_call.py asks the installed torch again. Not reported inside a
`try` that catches Exception.
"""

from __future__ import annotations

import ast

from ..astutil import dotted
from ..context import Check, Context

AUTOCAST = frozenset(["autocast", "amp.autocast", "amp.autocast_mode.autocast"])
# The per-device ones take no device type: given one, "autocast.__new__() got an unexpected
# keyword argument 'device_type'" (guitar-duets-source-separation's validation loop, blind set
# 270: `from torch.cuda.amp import autocast`, then `autocast(device_type=device.type, …)`)
DEVICE_AUTOCAST = frozenset(
    ["cuda.amp.autocast", "cpu.amp.autocast", "cuda.amp.autocast_mode.autocast"]
)
# torch.backends.<kind> has none of these (torch 2.13.0); torch.<kind> has each
MOVED = {
    "mps": frozenset(
        [
            "compile_shader",
            "current_allocated_memory",
            "device_count",
            "driver_allocated_memory",
            "empty_cache",
            "get_rng_state",
            "load_metallib",
            "manual_seed",
            "recommended_max_memory",
            "seed",
            "set_per_process_memory_fraction",
            "set_rng_state",
            "synchronize",
        ]
    ),
    "cuda": frozenset(
        [
            "current_device",
            "device_count",
            "empty_cache",
            "get_device_name",
            "is_available",
            "manual_seed",
            "manual_seed_all",
            "max_memory_allocated",
            "memory_allocated",
            "set_device",
            "synchronize",
        ]
    ),
}


def _autocast(ctx: Context, node: ast.Call, name: str) -> None:
    if node.args or any(k.arg in ("device_type", None) for k in node.keywords):
        return  # a device type given, positionally, by keyword or perhaps in **kwargs
    ctx.report(
        "TD009",
        node,
        f"`{dotted(node.func)}()` without a device type raises TypeError (missing "
        "'device_type') on every machine",
        f'torch.{name}(device_type=device.type, …) (or "cuda" where it only runs there)',
    )


def _device_autocast(ctx: Context, node: ast.Call) -> None:
    if not any(k.arg == "device_type" for k in node.keywords):
        return
    ctx.report(
        "TD009",
        node,
        f"`{dotted(node.func)}()` takes no device type: TypeError (unexpected keyword argument "
        "'device_type') on every machine",
        "torch.amp.autocast(device_type=…, …), which takes one",
    )


def _hasattr_test(test: ast.AST, attr: str) -> bool:
    return any(
        isinstance(n, ast.Call)
        and dotted(n.func) == "hasattr"
        and len(n.args) == 2
        and isinstance(n.args[1], ast.Constant)
        and n.args[1].value == attr
        for n in ast.walk(test)
    )


def _moved(ctx: Context, node: ast.Call, kind: str, attr: str) -> None:
    wrong, right = f"torch.backends.{kind}.{attr}", f"torch.{kind}.{attr}"
    written = dotted(node.func)
    # `th.backends.mps.empty_cache` -> `th.mps.empty_cache`, whatever torch is bound to here
    fixed = written.replace(".backends.", ".", 1) if ".backends." in written else None
    if any(t is not None and t[1] and _hasattr_test(t[0], attr) for t in ctx.tests_around()):
        message = (
            f"`{wrong}` does not exist, so the hasattr test around it is false in every torch "
            f"and this never runs: `{right}` is the function"
        )
        fixed = None  # the test must change with it: not a one-name edit
    else:
        message = (
            f"`{wrong}` does not exist (AttributeError on every machine): `{right}` is the function"
        )
    edit = ctx.replace(node.func, fixed) if fixed else None
    ctx.report("TD009", node, message, f"{right}(…)", edit)


def on_call(ctx: Context, node: ast.Call) -> None:
    if ctx.catch_all:
        return  # a handler catching Exception takes the TypeError or AttributeError
    name = ctx.torch_call(node)
    if name is None:
        return
    if name in AUTOCAST:
        _autocast(ctx, node, name)
        return
    if name in DEVICE_AUTOCAST:
        _device_autocast(ctx, node)
        return
    parts = name.split(".")
    if len(parts) == 3 and parts[0] == "backends" and parts[2] in MOVED.get(parts[1], ()):
        _moved(ctx, node, parts[1], parts[2])


CHECK = Check(
    rules=("TD009",),
    words=("autocast", "backends"),
    calls=frozenset(["autocast", *MOVED["mps"], *MOVED["cuda"]]),
    on_call=on_call,
)
