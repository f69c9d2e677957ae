"""TD401: `.numpy()` on a tensor that requires grad; TD403: `.numpy()` on a tensor that may
live on a GPU, without `.cpu()` first."""

from __future__ import annotations

import ast
import re

from ..astutil import chain, own_nodes
from ..context import Check, Context

DTYPE_WORD = re.compile(r"float|half|int|long|bool|double|dtype|complex|bfloat", re.I)


def _grad_visible(ctx: Context, names: list[str], root: ast.expr) -> bool:
    if ctx.no_grad or {"detach", "data", "item", "tolist"} & set(names):
        return False
    if {"weight", "bias"} & set(names[-1:]):
        return True
    if isinstance(root, ast.Name) and root.id in ctx.param_loop_vars:
        return True
    f = ctx.func
    return bool(f and isinstance(root, ast.Name) and f.trains() and f.from_call(root.id))


def _moves_to_device(expr: ast.expr) -> bool:
    """`x.cuda()`, `x.to(device)`, `x.to("cuda")` — not `x.to(torch.float32)`."""
    for sub in ast.walk(expr):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute):
            if sub.func.attr == "cuda":
                return True
            if sub.func.attr == "to" and (sub.args or sub.keywords):
                first = sub.args[0] if sub.args else sub.keywords[0].value
                if not DTYPE_WORD.search(ast.unparse(first)):
                    return True
    return False


def _device_names(ctx: Context) -> set[str]:
    """Names the current function (or module) puts on a device, and the outputs of calling
    them: `model = Net().to(device)`, `x = x.cuda()`, `out = model(x)`."""
    f = ctx.func
    key = f"device_names:{id(f.node) if f else 'module'}"
    got = ctx.memo.get(key)
    if got is None:
        body = list(f.node.body) if f else list(ctx._module.body if ctx._module else [])
        assigns = [n for n in own_nodes(body) if isinstance(n, ast.Assign)]
        got = set()
        for _ in range(2):  # `model` placed first, then `out = model(x)`; source order varies
            for a in assigns:
                v = a.value
                on_device = _moves_to_device(v) or (
                    isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in got
                )
                if on_device:
                    got.update(t.id for t in a.targets if isinstance(t, ast.Name))
        ctx.memo[key] = got
    return got  # type: ignore[return-value]


def on_call(ctx: Context, node: ast.Call) -> None:
    func = node.func
    if node.args or node.keywords or not isinstance(func, ast.Attribute):
        return
    names, root = chain(func.value)
    if _grad_visible(ctx, names, root):
        ctx.report(
            "TD401",
            node,
            "`.numpy()` on a tensor that requires grad raises RuntimeError",
            ".detach().cpu().numpy()",
            ctx.insert_after(root, ".detach()"),
        )
    if {"cpu", "tolist", "item"} & set(names):
        return
    on_device = _moves_to_device(func.value) or (
        isinstance(root, ast.Name) and root.id in _device_names(ctx)
    )
    if on_device:
        ctx.report(
            "TD403",
            node,
            "`.numpy()` on a tensor that may be on a GPU raises "
            '"can\'t convert cuda:0 device type tensor to numpy"',
            ".cpu().numpy() (or .detach().cpu().numpy())",
        )


CHECK = Check(
    rules=("TD401", "TD403"), words=("numpy",), calls=frozenset(["numpy"]), on_call=on_call
)
