"""TD402: `.item()` / `torch.cuda.synchronize()` on every iteration of a hot loop."""

from __future__ import annotations

import ast

from ..context import Check, Context


def on_call(ctx: Context, node: ast.Call) -> None:
    if not ctx.loops or not isinstance(node.func, ast.Attribute):
        return
    loop = ctx.loops[-1]
    training, timing = loop.kind()
    if node.func.attr == "synchronize":
        if ctx.torch_call(node) == "cuda.synchronize" and not timing:
            ctx.report(
                "TD402",
                node,
                "`torch.cuda.synchronize()` in a loop stalls the GPU pipeline every iteration",
                "synchronize once after the loop (or only when timing)",
            )
    elif not node.args and not node.keywords and training and ctx.if_depth == loop.if_depth:
        ctx.report(
            "TD402",
            node,
            "`.item()` in a training loop waits for the GPU every step",
            "accumulate on the device; call .item() every N steps (inside an `if`)",
        )


CHECK = Check(
    rules=("TD402",),
    words=("synchronize",),
    attrs=frozenset(["item"]),
    calls=frozenset(["item", "synchronize"]),
    on_call=on_call,
)
