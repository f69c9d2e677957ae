"""TD004: CUDA code behind a guard that rules out only one other device kind.

`if device != "cpu": torch.cuda.synchronize()` is guarded on a CPU machine, but on a Mac the
device is "mps" and the call raises "Torch not compiled with CUDA enabled"; the same for the
`else:` of `if args.cpu:` or of an MPS check. Reported where TD001/TD002/TD003 stay quiet
because of the guard. It fails only where another non-CUDA device is picked: the confidence is
decided with the project view (kept when some file picks MPS, else low)."""

from __future__ import annotations

import ast

from ..astutil import CUDA_STRING
from ..context import Check, Context
from .cuda_api import RAISING
from .cuda_call import is_tensor_cuda


def cuda_code(ctx: Context, node: ast.Call) -> str | None:
    """What in this call needs CUDA, in words; None when nothing does."""
    name = ctx.torch_call(node)
    if name is not None and name.startswith("cuda.") and name[len("cuda.") :] in RAISING:
        return f"`torch.{name}()`"
    if isinstance(node.func, ast.Attribute) and node.func.attr == "cuda":
        return "`.cuda()`" if is_tensor_cuda(ctx, node) else None
    if isinstance(node.func, ast.Attribute) and node.func.attr == "to" and node.args:
        first = node.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return f'`.to("{first.value}")`' if CUDA_STRING.fullmatch(first.value) else None
    return None


def on_call(ctx: Context, node: ast.Call) -> None:
    if not ctx.guard:
        return
    what = cuda_code(ctx, node)
    test = ctx.narrow_guard() if what else None
    if test is None:
        return
    # A device value that rules out the CPU (`device.type != "cpu"`) leaves MPS and XPU
    # machines: that needs a project that picks one. A flag (`if not args.cpu`) is the user's
    # choice, not a test of the machine, and ruling out MPS leaves every CPU-only machine.
    about_cpu = isinstance(test, ast.Compare) and "cpu" in ast.unparse(test).lower()
    ctx.report(
        "TD004",
        node,
        f"{what} behind `{ast.unparse(test)}`, which rules out one device kind only: on the "
        "others it raises 'Torch not compiled with CUDA enabled'",
        "test for CUDA itself: `if torch.cuda.is_available():` / `device.type == 'cuda'`",
        needs=("mps",) if about_cpu else None,
    )


CHECK = Check(
    rules=("TD004",),
    words=("cuda",),
    calls=frozenset([*RAISING, "cuda", "to"]),
    on_call=on_call,
)
