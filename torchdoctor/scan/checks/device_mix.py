"""TD303: a tensor made without `device=` meets a tensor the same function put on a device.

`noise = torch.randn(x.shape)` after `x = x.to(device)`, then `x + noise`: the factory makes a
CPU tensor, and the sum raises "RuntimeError: Expected all tensors to be on the same device,
but found at least two devices, cuda:0 and cpu!" on every GPU (and "mps:0 and cpu" on a Mac).
Reported where both meet in one computation of the same function (scan/meets.py: what a GPU
was seen to refuse), the factory result not moved in between; `forward` is TD302's."""

from __future__ import annotations

import ast

from ..astutil import own_nodes
from ..context import Check, Context
from ..meets import meetings
from .forward_factory import FORWARD_FACTORIES, LIKE_FACTORIES, REDUCING, moved_in
from .module_attribute import is_scalar_factory
from .numpy_call import _last_assigned, _on_device, _placement

# Tensor methods whose result stays where the tensor is: `x.long()[:, None]` is still on x's
# device, `c.unsqueeze(0)` still on the CPU. Not `.shape`, `.item()`, `.to(…)` and kin.
KEEPING = frozenset([
    "long", "float", "double", "half", "bfloat16", "int", "bool", "byte", "unsqueeze", "squeeze",
    "view", "reshape", "transpose", "permute", "t", "contiguous", "expand", "expand_as", "repeat",
    "flatten", "clone", "detach", "flip", "narrow", "sum", "mean", "abs", "neg", "exp", "log",
    "sqrt", "sigmoid", "softmax", "cumsum", "prod", "norm",
])  # fmt: skip
KEEPING_ATTRS = frozenset(["T", "mT", "data"])


def _factory_name(ctx: Context, node: ast.Call) -> tuple[str, bool] | None:
    """The factory's name and whether it makes a 0-dim tensor (a scalar, fine beside any
    device except as clamp's bound); None when it is told its device."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and ctx.is_torch(func.value)):
        return None
    if func.attr not in FORWARD_FACTORIES:
        return None
    if any(k.arg in ("device", None) for k in node.keywords) or id(node) in ctx.placed:
        return None
    return func.attr, is_scalar_factory(func.attr, node)


def _root(expr: ast.expr, whole: bool = True) -> ast.expr:
    """`expr` without the subscripts, signs and device-keeping methods around its tensor.
    `whole=False` stops at a whole reduction (`c.sum()`): a 0-dim tensor, fine beside any
    device."""
    while True:
        if not whole and _whole_reduction(expr):
            return expr
        if isinstance(expr, ast.Subscript):
            expr = expr.value
        elif isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
            expr = expr.operand
        elif isinstance(expr, ast.Attribute) and expr.attr in KEEPING_ATTRS:
            expr = expr.value
        elif (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and expr.func.attr in KEEPING
        ):
            expr = expr.func.value
        else:
            return expr


def _whole_reduction(expr: ast.expr) -> bool:
    return (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in REDUCING
        and not expr.args
        and not expr.keywords
    )


def _device_of(expr: ast.expr) -> ast.expr | None:
    """`a` of `b.to(a.device)`, `b.to(device=a.device)` or `b.type_as(a)`: moved to where
    another tensor is, so placed as that one is."""
    if not (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute)):
        return None
    args = [*expr.args, *(k.value for k in expr.keywords if k.arg == "device")]
    if expr.func.attr == "type_as" and args:
        return args[0]
    if expr.func.attr == "to" and args:
        arg = args[0]
        if isinstance(arg, ast.Attribute) and arg.attr == "device":
            return arg.value
    return None


def _cpu_named(ctx: Context, expr: ast.expr, line: int) -> bool:
    """Is the outermost move of `expr` a `.to(name)` whose `name` the scope last set to the
    CPU (`device = torch.device("cpu")`, BirdCLEF's probe sweep, blind set 368)?"""
    while isinstance(expr, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            if expr.func.attr == "to":
                dev = [k.value for k in expr.keywords if k.arg == "device"] or expr.args[:1]
                if dev and isinstance(dev[0], ast.Name):
                    last = _last_assigned(ctx, dev[0].id, line)
                    text = ast.unparse(last[1]) if last else ""
                    return "cpu" in text and "cuda" not in text
                return False
            expr = expr.func.value
        else:
            expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return False


def _on_gpu(ctx: Context, name: str, line: int, called: bool = False) -> bool:
    """`_on_device`, less a move to a name that holds the CPU device."""
    if not _on_device(ctx, name, line, called=called):
        return False
    last = _last_assigned(ctx, name, line)
    return last is None or not _cpu_named(ctx, last[1], last[0])


def _placed(ctx: Context, expr: ast.expr, line: int, depth: int = 0) -> bool:
    """Is `expr` a tensor on a device: moved there, or computed from one (`x.long()[:, None]`,
    `x > 0`, `x * 2`, `x = x.unsqueeze(1)` after `x = x.to(device)`)?"""
    root = _root(expr)
    other = _device_of(root)
    if other is not None:  # `b.to(a.device)`: where `a` is
        return depth < 3 and _placed(ctx, other, line, depth + 1)
    placement = _placement(expr)
    if placement is not None:
        return placement
    if isinstance(root, ast.BinOp):
        return _placed(ctx, root.left, line, depth) or _placed(ctx, root.right, line, depth)
    if isinstance(root, ast.Compare):
        return any(_placed(ctx, s, line, depth) for s in (root.left, *root.comparators))
    if not isinstance(root, ast.Name):
        return False
    if _on_gpu(ctx, root.id, line):
        return True
    last = _last_assigned(ctx, root.id, line) if depth < 3 else None
    return last is not None and _placed(ctx, last[1], last[0], depth + 1)


def _made_of(value: ast.expr, node: ast.Call) -> bool:
    """Is `value` the factory call, or arithmetic with it as an operand (`randn(s) * sigma`)?"""
    if value is node:
        return True
    if isinstance(value, ast.BinOp):
        return _made_of(value.left, node) or _made_of(value.right, node)
    return isinstance(value, ast.UnaryOp) and _made_of(value.operand, node)


def _partner(ctx: Context, fn: ast.AST, is_it, scalar: bool) -> ast.expr | None:
    """A device tensor that meets the factory's result (`is_it` tells its expressions) where
    torch asks both to share a device; for a 0-dim result, only as a clamp's bound."""
    for meet in meetings(ctx, fn):
        if scalar and not meet.bounds:
            continue
        line = getattr(meet.node, "lineno", 0)
        if meet.called:  # a module moved to a device, given the factory's tensor
            model = meet.sides[0]
            if (
                isinstance(model, ast.Name)
                and any(is_it(s) for s in meet.sides[1:])
                and _on_gpu(ctx, model.id, line, called=True)
            ):
                return model
            continue
        if meet.indexed:  # only a CPU tensor indexed by a device one raises
            candidates = meet.sides[1:] if is_it(meet.sides[0]) else ()
        elif any(is_it(s) for s in meet.sides):
            candidates = [s for s in meet.sides if not is_it(s)]
        else:
            continue
        for s in candidates:
            if _placed(ctx, s, line):
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
    made = _factory_name(ctx, node)
    if made is None:
        return
    name, scalar = made
    if name == "tensor" and node.args and _placed(ctx, node.args[0], node.lineno):
        return  # `torch.tensor(t)` of a device tensor copies it on that device
    body = list(f.node.body)
    target, value = None, None
    for stmt in own_nodes(body):
        if isinstance(stmt, ast.Assign) and _made_of(stmt.value, node) and len(stmt.targets) == 1:
            t = stmt.targets[0]
            target, value = (t.id, stmt.value) if isinstance(t, ast.Name) else (None, None)
    if target is not None and moved_in(body, target):
        return

    def is_it(e: ast.expr) -> bool:
        e = _root(e, whole=False)
        if isinstance(e, ast.BinOp):  # `c * 2` is still the factory's CPU tensor
            return is_it(e.left) or is_it(e.right)
        if e is node:
            return True
        if target is None or not (isinstance(e, ast.Name) and e.id == target):
            return False
        last = _last_assigned(ctx, target, e.lineno)  # not after `c = x * 2`
        return last is not None and last[1] is value

    partner = _partner(ctx, f.node, is_it, scalar)
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
