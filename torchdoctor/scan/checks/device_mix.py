"""TD303: a tensor made without `device=` meets a tensor the same function put on a device.

`noise = torch.randn(x.shape)` after `x = x.to(device)`, then `x + noise`: the factory makes a
CPU tensor, and the sum raises "RuntimeError: Expected all tensors to be on the same device,
but found at least two devices, cuda:0 and cpu!" on every GPU (and "mps:0 and cpu" on a Mac).
Reported where both meet in one expression (arithmetic, `torch.cat`/`stack`/`where`/`matmul`)
of the same function, the factory result not moved in between; `forward` is TD302's."""

from __future__ import annotations

import ast

from ..astutil import dotted, own_nodes
from ..context import Check, Context
from .forward_factory import FORWARD_FACTORIES, LIKE_FACTORIES, _moved_later
from .module_attribute import is_scalar_factory
from .numpy_call import _on_device, _placement

COMBINING = frozenset(["cat", "stack", "where", "matmul", "bmm", "mm", "add", "mul", "hstack"])


def _factory_name(ctx: Context, node: ast.Call) -> str | None:
    func = node.func
    if not (isinstance(func, ast.Attribute) and ctx.is_torch(func.value)):
        return None
    if func.attr not in FORWARD_FACTORIES or is_scalar_factory(func.attr, node):
        return None
    if any(k.arg in ("device", None) for k in node.keywords) or id(node) in ctx.placed:
        return None
    return func.attr


def _placed(ctx: Context, expr: ast.expr, line: int) -> bool:
    if _placement(expr):
        return True
    return isinstance(expr, ast.Name) and _on_device(ctx, expr.id, line)


def _made_of(value: ast.expr, node: ast.Call) -> bool:
    """Is `value` the factory call, or arithmetic with it as an operand (`randn(s) * sigma`)?"""
    if value is node:
        return True
    if isinstance(value, ast.BinOp):
        return _made_of(value.left, node) or _made_of(value.right, node)
    return isinstance(value, ast.UnaryOp) and _made_of(value.operand, node)


def _moved(body: list[ast.AST], name: str) -> bool:
    """`noise = noise.to(x.device)` (or `.cuda()`, `.type_as(x)`) somewhere in the function."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("to", "cuda", "type_as")
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == name
        for n in own_nodes(body)
    )


def _elements(arg: ast.expr) -> list[ast.expr]:
    return list(arg.elts) if isinstance(arg, (ast.List, ast.Tuple)) else [arg]


def _partners(ctx: Context, scope: list[ast.AST], is_it) -> ast.expr | None:
    """A device tensor that meets the factory result (`is_it` tells its expression) in one
    arithmetic expression or combining call of the scope."""
    for node in own_nodes(scope):
        if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Mod):
            sides = [node.left, node.right]
        elif isinstance(node, ast.Call) and dotted(node.func).rsplit(".", 1)[-1] in COMBINING:
            sides = [e for a in node.args for e in _elements(a)]
        else:
            continue
        if any(is_it(s) for s in sides):
            for s in sides:
                if not is_it(s) and _placed(ctx, s, node.lineno):
                    return s
    return None


def _places(ctx: Context, fn: ast.AST) -> bool:
    """Does the text of the function move anything (`.to(…)`, `.cuda()`)? Only then can a
    factory's CPU tensor meet a device tensor here; computed once per function."""
    key = f"places:{id(fn)}"
    if key not in ctx.memo:
        text = "\n".join(ctx.lines[fn.lineno - 1 : fn.end_lineno])  # type: ignore[attr-defined]
        ctx.memo[key] = ".to(" in text or ".cuda(" in text
    return bool(ctx.memo[key])


def on_call(ctx: Context, node: ast.Call) -> None:
    f = ctx.func
    if f is None or f.node.name == "forward" or ctx.guard or not _places(ctx, f.node):
        return
    name = _factory_name(ctx, node)
    if name is None or _moved_later(ctx, node):
        return
    target = None
    for stmt in own_nodes(list(f.node.body)):
        if isinstance(stmt, ast.Assign) and _made_of(stmt.value, node) and len(stmt.targets) == 1:
            t = stmt.targets[0]
            target = t.id if isinstance(t, ast.Name) else None

    if target is not None and _moved(list(f.node.body), target):
        return

    def is_it(e: ast.expr) -> bool:
        return e is node or (target is not None and isinstance(e, ast.Name) and e.id == target)

    partner = _partners(ctx, list(f.node.body), is_it)
    if partner is None:
        return
    hint = f"torch.{name}(…, device={ast.unparse(partner)}.device)"
    if name in LIKE_FACTORIES:
        hint += f", or torch.{name}_like({ast.unparse(partner)})"
    ctx.report(
        "TD303",
        node,
        f"`torch.{name}(…)` makes a CPU tensor that meets `{ast.unparse(partner)}`, which this "
        "function put on a device: 'Expected all tensors to be on the same device'",
        hint,
    )


CHECK = Check(rules=("TD303",), attrs=FORWARD_FACTORIES, calls=FORWARD_FACTORIES, on_call=on_call)
