"""TD001: `.cuda()` on a tensor or module, outside any device guard."""

from __future__ import annotations

import ast
import re

from ..astutil import dotted
from ..context import DEVICE_VARIABLE, Check, Context
from ..model import Edit

# Tensor.cuda(device=None, non_blocking=False, memory_format=…); Module.cuda(device=None).
CUDA_KEYWORDS = frozenset(["device", "non_blocking", "memory_format"])
# What a device index argument is usually called: `x.cuda(args.gpu)`, `.cuda(local_rank)`.
DEVICE_ARG = re.compile(r"dev|gpu|rank|cuda|id$|idx|index|^i$|^d$", re.I)


def _device_like(arg: ast.expr) -> bool:
    if isinstance(arg, ast.Constant):
        return isinstance(arg.value, (int, str)) and not isinstance(arg.value, bool)
    if isinstance(arg, (ast.Name, ast.Attribute)):
        return bool(DEVICE_ARG.search(dotted(arg).rsplit(".", 1)[-1]))
    if isinstance(arg, ast.Call):  # torch.cuda.current_device(), int(os.environ[…])
        return bool(DEVICE_ARG.search(dotted(arg.func))) or dotted(arg.func) == "int"
    return isinstance(arg, ast.Subscript)


def is_tensor_cuda(ctx: Context, node: ast.Call) -> bool:
    """Is this `Tensor.cuda`/`Module.cuda`, not a function of the same name the code defines
    (a quantizer's `cuda(qtensor, meta=…)`)?"""
    func = node.func
    if not isinstance(func, ast.Attribute) or ctx.is_torch(func.value):
        return False
    if len(node.args) > 1 or any(k.arg not in (*CUDA_KEYWORDS, None) for k in node.keywords):
        return False
    first = node.args[0] if node.args else None
    if first is not None and not isinstance(first, ast.Starred) and not _device_like(first):
        return False  # `*args` / `**kw` may well carry a device: still Tensor.cuda
    # `self.cuda(…)` in a file that defines its own `cuda` method calls that method.
    return not (ctx.defines("cuda") and dotted(func.value) in ("self", "cls"))


def on_call(ctx: Context, node: ast.Call) -> None:
    if ctx.guard or id(node) in ctx.skip_nodes or not is_tensor_cuda(ctx, node):
        return
    func = node.func
    assert isinstance(func, ast.Attribute)
    edit = None
    simple = not node.args and all(k.arg == "non_blocking" for k in node.keywords)
    dot = ctx.dot_before(func)
    if simple and dot is not None and ctx.device_in_scope(node):
        kws = "".join(f", {ast.unparse(k)}" for k in node.keywords)
        edit = Edit(dot, ctx.end(node), f".to({DEVICE_VARIABLE}{kws})")
    ctx.summary.cuda_calls += 1  # the project's count (calibration.CUDA_PROJECT)
    judged = ctx.written_for_its_machine("`.cuda()`")
    if _moved_in_the_other_arm(ctx, func.value):
        judged = {
            "confidence": "low",
            "why": "the other branch moves it to a device it is given: `.cuda()` runs only "
            "where none is",
        }
    ctx.report(
        "TD001",
        node,
        "`.cuda()` crashes where CUDA is absent (CPU machines, Macs)",
        ".to(device) with one device chosen at start-up",
        edit,
        **judged,
    )


def _moved_in_the_other_arm(ctx: Context, receiver: ast.expr) -> bool:
    """`imgs.to(args.device) if args else imgs.cuda()`, or an `if args:` moving the model to
    `args.device` with an `else:` calling `.cuda()`: the code takes a device where it is
    given one, and `.cuda()` is the branch for callers that give none (AlphaPose's detector
    APIs, vendored in many trackers; seven lookalikes in one of blind set 323)."""
    if not ctx.other_arms:
        return False
    same = ast.dump(receiver)
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "to"
        and n.args
        and isinstance(n.args[0], (ast.Name, ast.Attribute))
        and _device_like(n.args[0])  # a device, not a dtype (`x.to(torch.float16)`)
        and ast.dump(n.func.value) == same
        for arm in ctx.other_arms[-1]
        for n in ast.walk(arm)
    )


CHECK = Check(rules=("TD001",), words=("cuda",), calls=frozenset(["cuda"]), on_call=on_call)
