"""TD002: a hard-coded "cuda" device string where a tensor or module is placed."""

from __future__ import annotations

import ast
import re

from ..astutil import CUDA_STRING, dotted
from ..context import DEVICE_VARIABLE, Check, Context

# `check_device(x, device="cuda")` compares, it does not place a tensor.
PREDICATE_CALL = re.compile(r"^_?(check|is|has|assert|expect|require|skip)", re.I)
# Tensor methods that take a device: `x.new_zeros(…, device=…)`, `x.to(device=…)`.
PLACING_METHODS = re.compile(r"^(to|cuda|new_\w+|\w+_like|empty_strided|pin_memory)$")


def places_tensor(ctx: Context, node: ast.Call, attr: str | None) -> bool:
    """Does `device=` here place a tensor or module? torch's own functions and tensor methods
    do; a config object, dict or user function only records a default (`Config(device="cuda")`)
    — the one place a user changes the device, like `device = "cuda"`."""
    if ctx.torch_call(node) is not None:
        return True
    return attr is not None and bool(PLACING_METHODS.match(attr))


def _defines_device(ctx: Context, node: ast.Call) -> dict[str, str]:
    """`CUDA_DEVICE = torch.device("cuda")`, `self._device = torch.device("cuda")`: a name for
    a device, which constructs on any machine (like `device = "cuda"`, which no rule flags);
    what fails is a use of it without a fallback. In sixteen blind corpora all five such lines
    shown by default were lookalikes (InvokeAI's table of devices, stylegan3's renderer,
    InstantMesh's app): `low`."""
    parent = ctx.parents.get(id(node))
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node:
        return {
            "confidence": "low",
            "why": "it names a device (torch.device() constructs without CUDA); the pitfall, "
            "if any, is where the name is used",
        }
    return {}


def on_call(ctx: Context, node: ast.Call) -> None:
    if ctx.guard:
        return
    func = node.func
    attr = func.attr if isinstance(func, ast.Attribute) else None
    fname = dotted(func)
    is_ctor = ctx.torch_call(node) == "device"
    if (is_ctor and ctx.compare) or PREDICATE_CALL.match(fname.rsplit(".", 1)[-1]):
        return  # `torch.device("cuda") in devices`, `check_device(x, device="cuda")`
    candidates: list[ast.expr] = []
    if places_tensor(ctx, node, attr):
        candidates += [k.value for k in node.keywords if k.arg == "device"]
    if attr == "to" or is_ctor:
        candidates += node.args[:1]
    for c in candidates:
        if not (
            isinstance(c, ast.Constant)
            and isinstance(c.value, str)
            and CUDA_STRING.fullmatch(c.value)
        ):
            continue
        if ctx.in_defaults:
            return  # `def f(device=torch.device("cuda"))`: TD005's, against the callers
        # `torch.device("cuda")` is where a device gets defined: no safe rewrite there.
        fixable = not is_ctor and ctx.device_in_scope(c)
        ctx.report(
            "TD002",
            c,
            f'"{c.value}" is hard-coded: it fails where CUDA is absent',
            "pass a device variable chosen once "
            "(torch.device('cuda' if torch.cuda.is_available() else 'cpu'))",
            ctx.replace(c, DEVICE_VARIABLE) if fixable else None,
            **(
                (is_ctor and _defines_device(ctx, node))
                or ctx.written_for_its_machine(f'"{c.value}"')
            ),
        )


CHECK = Check(
    rules=("TD002",),
    words=("cuda",),
    calls=frozenset(["to", "device"]),
    keywords=frozenset(["device"]),
    on_call=on_call,
)
