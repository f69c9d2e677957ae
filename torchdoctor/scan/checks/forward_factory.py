"""TD302: a tensor factory in `forward` without `device=`."""

from __future__ import annotations

import ast
import re

from ..astutil import dotted, names, only_harmless_uses, own_nodes
from ..context import Check, Context
from .module_attribute import is_scalar_factory

# Factories that take device= and are the usual way to make a tensor inside forward.
FORWARD_FACTORIES = frozenset([
    "zeros", "ones", "empty", "randn", "rand", "randint", "randperm", "arange", "tensor", "full",
    "eye", "linspace",
])  # fmt: skip
# torch.<name>_like exists for these only (no arange_like, tensor_like, eye_like…).
LIKE_FACTORIES = frozenset(["zeros", "ones", "empty", "rand", "randn", "randint", "full"])
MOVING_METHODS = frozenset(["to", "type_as", "cuda"])
POSITION_TABLE = re.compile(r"rope|rotary|pos(itional)?_?emb", re.I)
TRACING = re.compile(r"onnx|tracing", re.I)


def _compared_with_numbers(ctx: Context, node: ast.Call) -> bool:
    """`torch.rand(1) < self.p`: a draw compared with a Python number gives a Python-side
    decision, whatever the device."""
    parent = ctx.parents.get(id(node))
    return isinstance(parent, ast.Compare) and all(
        isinstance(n, (ast.Constant, ast.Attribute, ast.Name)) or n is node
        for n in (parent.left, *parent.comparators)
    )


def _moved_later(ctx: Context, node: ast.Call) -> bool:
    """`idx = torch.arange(n)` … `idx = idx.to(x.device)` / `idx.type_as(x)` in the same
    function: the tensor reaches the right device before it meets the model's. Or it is only
    used as an index, iterated or compared, where a CPU tensor is fine."""
    f = ctx.func
    if f is None:
        return False
    target, assign = None, None
    for stmt in own_nodes(list(f.node.body)):
        if isinstance(stmt, ast.Assign) and stmt.value is node:
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                target, assign = stmt.targets[0].id, stmt
            break
    if target is None:
        return False
    if only_harmless_uses(f.node, lambda n: isinstance(n, ast.Name) and n.id == target, assign):
        return True
    return any(
        isinstance(sub, ast.Call)
        and isinstance(sub.func, ast.Attribute)
        and sub.func.attr in MOVING_METHODS
        and isinstance(sub.func.value, ast.Name)
        and sub.func.value.id == target
        for sub in own_nodes(list(f.node.body))
    )


def _position_table(ctx: Context) -> bool:
    """Rotary / positional tables are built in the module and cast to the input's device by
    the attention that applies them; ONNX tracing paths compute shapes on the CPU."""
    f = ctx.func
    if f and f.cls and POSITION_TABLE.search(f.cls.node.name):
        return True
    return any(TRACING.search(n) for t in ctx.if_tests for n in names(t))


def on_call(ctx: Context, node: ast.Call) -> None:
    f = ctx.func
    if not (f and f.cls and f.cls.is_module and f.node.name == "forward"):
        return
    func = node.func
    if not (isinstance(func, ast.Attribute) and ctx.is_torch(func.value)):
        return
    if any(k.arg in ("device", None) for k in node.keywords) or id(node) in ctx.placed:
        return
    if is_scalar_factory(func.attr, node) or _compared_with_numbers(ctx, node):
        return
    if isinstance(ctx.parents.get(id(node)), ast.Subscript):
        return  # `x[torch.arange(b), idx]`: CPU indices work on tensors on any device
    if ctx.then.get(id(node)) == "cpu":
        return  # `torch.zeros(…).cpu()`: put on the CPU on purpose (Real-Time-Voice-Cloning)
    if _moved_later(ctx, node) or _position_table(ctx):
        return
    hint = f"{dotted(func)}(…, device=x.device) for an input x"
    if func.attr in LIKE_FACTORIES:
        hint += f", or torch.{func.attr}_like(x)"
    ctx.report(
        "TD302",
        node,
        f"`{dotted(func)}(…)` in `forward` makes a CPU tensor whatever the model's device",
        hint,
        confidence="medium",
    )


CHECK = Check(
    rules=("TD302",),
    attrs=FORWARD_FACTORIES,
    calls=FORWARD_FACTORIES,
    on_call=on_call,
)
