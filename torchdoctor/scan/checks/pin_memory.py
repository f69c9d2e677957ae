"""TD501: `DataLoader(pin_memory=True)` hard-coded (warns and is ignored without an
accelerator); TD502: pinning that raises there — `Tensor.pin_memory()` and torch's allocators
(`torch.empty(…, pin_memory=True)`). `save_on_cpu(pin_memory=True)` checks for CUDA itself
(measured on torch 2.13 CPU): not flagged."""

from __future__ import annotations

import ast
import re

from ..astutil import call_name, dotted
from ..context import Check, Context

PINNING_SCOPE = re.compile(r"offload|onload|pin", re.I)
CUDA_TENSOR = re.compile(r"cuda\.[A-Z]\w*Tensor$")
LOADER = re.compile(r"loader$", re.I)  # DataLoader, StatefulDataLoader, get_loader…

RAISES = "raises RuntimeError on a machine without an accelerator (CPU-only host)"


def _keyword_fix(ctx: Context, value: ast.expr) -> tuple[str, object]:
    torch = "torch" if "torch" in ctx.torch_names else min(ctx.torch_names)
    text = f"{torch}.cuda.is_available()"
    return f"pin_memory={text}", ctx.replace(value, text)


def _raises(ctx: Context, node: ast.Call) -> bool:
    """torch's own allocators pin at once; DataLoader only warns."""
    torch_name = ctx.torch_call(node)
    return torch_name is not None and not torch_name.endswith("DataLoader")


def _pinning_code(ctx: Context) -> bool:
    """The offloading machinery itself (`def pin_memory(self)`, `_onload_from_disk`, a
    group_offloading module), which runs only when its caller chose an accelerator, or a
    function that also builds legacy CUDA tensors (`torch.cuda.ByteTensor`): CUDA-only."""
    scopes = [ctx.path, *(f.node.name for f in ctx.funcs), *(c.node.name for c in ctx.classes)]
    scopes += [f.cls.node.name for f in ctx.funcs if f.cls]
    if any(PINNING_SCOPE.search(s) for s in scopes):
        return True
    f = ctx.func
    return f is not None and any(
        isinstance(n, ast.Call) and CUDA_TENSOR.search(dotted(n.func)) for n in ast.walk(f.node)
    )


def on_call(ctx: Context, node: ast.Call) -> None:
    if ctx.guard or (ctx.torch_call(node) or "").endswith("save_on_cpu"):
        return  # save_on_cpu pins only when CUDA is available: neither raises nor warns
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "pin_memory":
        if (
            not node.args
            and not node.keywords
            and not ctx.is_torch(func.value)
            and not _pinning_code(ctx)
        ):
            ctx.report(
                "TD502",
                node,
                f"`.pin_memory()`: {RAISES}",
                "pin only when an accelerator is present (if torch.cuda.is_available(): …)",
            )
        return
    for k in node.keywords:
        if k.arg != "pin_memory" or not (
            isinstance(k.value, ast.Constant) and k.value.value is True
        ):
            continue
        fix, edit = _keyword_fix(ctx, k.value)
        if _raises(ctx, node):
            # no edit: --fix rewrites the DataLoader case (TD501) only
            ctx.report("TD502", k.value, f"`pin_memory=True`: {RAISES}", fix)
        elif LOADER.search(call_name(node)):  # other libraries' pin_memory= mean their own thing
            ctx.report(
                "TD501",
                k.value,
                "`pin_memory=True` without an accelerator only warns and is ignored",
                fix,
                edit,  # type: ignore[arg-type]
                # advice, like TD201: it only warns (recorded: tests/facts/device_claims), and
                # of the 28 such lines labelled in eight blind corpora 2 were must-flag (EasyOCR's CPU
                # inference); shown with --confidence low
                confidence="low",
            )


CHECK = Check(
    rules=("TD501", "TD502"),
    words=("pin_memory",),
    calls=frozenset(["pin_memory"]),
    keywords=frozenset(["pin_memory"]),
    on_call=on_call,
)
