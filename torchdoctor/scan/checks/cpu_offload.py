"""TD007: diffusers' model CPU offload called where there may be no accelerator.

`pipe.enable_model_cpu_offload()` keeps each model on the CPU and moves it to an accelerator
for its forward pass; with none there is nothing to offload to. diffusers since 2025
(huggingface/diffusers#11288, `device=None`) picks the accelerator itself and raises
"`enable_model_cpu_offload` requires accelerator, but not found" on a CPU-only machine; older
releases default to `device="cuda"` and fail at the first step with "Torch not compiled with
CUDA enabled" (or, on a CUDA wheel without a GPU, "Found no NVIDIA driver"), on a Mac too.
`enable_sequential_cpu_offload()` is the same. Ten labelled crashes in eight ComfyUI
plug-ins of the blind corpora 123-152 (BrushNet, X-Adapter, I2VGenXL, HiDiffusion,
Face_Anon_Simple, PhotoDoodle, Personalize_Anything, CSGO): loaders that always offload, in
files that pick the CPU where CUDA is absent or run in ComfyUI, which does (`--cpu`). The same
call in a script made for a GPU (diffusers' README pattern, X-Adapter's upstream scripts) is
what its author runs on their own machine: low."""

from __future__ import annotations

import ast
import re

from ..astutil import names
from ..context import Check, Context
from ..guards import narrow_when_false, narrow_when_true

OFFLOADS = frozenset(["enable_model_cpu_offload", "enable_sequential_cpu_offload"])
# A test that asks for an accelerator: `torch.cuda.is_available()`, `device.type == "cuda"`,
# `torch.cuda.device_count() > 0`, `"cuda" in device`.
ACCELERATOR = re.compile(r"cuda|gpu|accelerat|is_available|device_count|xpu", re.I)
# A ComfyUI node: ComfyUI picks the CPU on a machine without a GPU or with `--cpu`
# (`comfy.model_management.get_torch_device()`), so its plug-ins must run there.
# The CPU itself (astutil's CPU_WORD also takes MPS, an accelerator here).
CPU = re.compile(r"(^|_)cpu($|_)", re.I)
COMFY = re.compile(r"\bcomfy\b[^\n]*\bmodel_management\b|\bNODE_CLASS_MAPPINGS\b")


def _asks_accelerator(test: ast.AST) -> bool:
    return any(ACCELERATOR.search(n) for n in names(test))


def _mentions_cpu(test: ast.AST) -> bool:
    return any(CPU.search(n) for n in names(test))


def _negated(test: ast.AST) -> ast.AST | None:
    return test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else None


def _accelerator_there(test: ast.AST, holds: bool) -> bool:
    """Does this test, holding (True) or not (False), leave only machines with an accelerator?
    `if torch.cuda.is_available():`, `if device != "cpu":`, the `else:` of `if device ==
    "cpu":` or after `if not torch.cuda.is_available(): return`. Not `if device != "mps":`:
    the CPU passes it (CSGO's node)."""
    inner = _negated(test)
    if holds:
        if inner is None and _asks_accelerator(test):
            return True
        return narrow_when_true(test) and _mentions_cpu(test)  # type: ignore[arg-type]
    if inner is not None and _asks_accelerator(inner):
        return True
    return narrow_when_false(test) and _mentions_cpu(test)  # type: ignore[arg-type]


def _opted_in(ctx: Context, test: ast.AST, holds: bool) -> bool:
    """`if args.cpu_offload:` where `--cpu-offload` is a `store_true` option: offloading is what
    the user asked for, on the GPU whose memory it saves (enhanced-deforum-music-generator's
    video CLI, blind set 288: six lookalikes). Not an option that is on by default (a ComfyUI
    loader's `enable_model_cpu_offload` input defaulting to True: DepthCrafter, set 260)."""
    if not holds or _negated(test) is not None:
        return False
    for name in names(test):
        flag = name.rsplit(".", 1)[-1]
        if "offload" not in flag.lower():
            continue
        option = flag.replace("_", "[-_]")
        call = re.search(rf"""add_argument\(\s*["']--{option}["'][^)]*\)""", ctx.text)
        spec = call.group(0).replace(" ", "") if call else ""
        if "store_true" in spec and "default=True" not in spec:
            return True
    return False


def _device_given(node: ast.Call) -> bool:
    """`device=` passed and not a "cuda" literal: the caller chose where models go."""
    for k in node.keywords:
        if k.arg == "device":
            value = k.value
            return not (
                isinstance(value, ast.Constant)
                and isinstance(value.value, str)
                and value.value.startswith("cuda")
            )
    return False


def on_call(ctx: Context, node: ast.Call) -> None:
    func = node.func
    if not isinstance(func, ast.Attribute) or func.attr not in OFFLOADS or _device_given(node):
        return
    if ctx.func is not None and ctx.func.node.name == func.attr:
        return  # a pipeline's own override calling diffusers' (`super().enable_…()`)
    for entry in ctx.tests_around():
        if entry is None or _accelerator_there(*entry) or _opted_in(ctx, *entry):
            return
    if "is_comfy" not in ctx.memo:
        ctx.memo["is_comfy"] = bool(COMFY.search(ctx.text))
    runs_on_cpu = ctx.falls_back_to_cpu or ctx.memo["is_comfy"]
    ctx.report(
        "TD007",
        node,
        f"`{func.attr}()` needs an accelerator to offload to: without one diffusers raises "
        f"'`{func.attr}` requires accelerator, but not found' (older releases offload to "
        "'cuda': 'Torch not compiled with CUDA enabled')",
        "offload only where an accelerator is there (`if torch.cuda.is_available():`); "
        "otherwise `pipe.to(device)`",
        confidence="medium" if runs_on_cpu else "low",
        why=None
        if runs_on_cpu
        else "CPU offload in a file that never picks the CPU: code its author runs on the GPU "
        "machine it was written for",
    )


CHECK = Check(rules=("TD007",), words=("cpu_offload",), calls=OFFLOADS, on_call=on_call)
