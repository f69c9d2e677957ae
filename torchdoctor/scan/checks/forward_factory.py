"""TD302: a tensor factory in `forward` without `device=`."""

from __future__ import annotations

import ast
import re

from ..astutil import dotted, names, only_harmless_uses, own_nodes
from ..context import Check, Context
from ..meets import Meet, meetings
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


def _assigned_to(f: ast.AST, node: ast.Call) -> tuple[str, ast.Assign] | None:
    """`name = <node>` in the function: the name and the assignment."""
    for stmt in own_nodes([f]):
        if isinstance(stmt, ast.Assign) and stmt.value is node:
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                return stmt.targets[0].id, stmt
            return None
    return None


def _harmless_uses(fn: ast.AST, found: tuple[str, ast.Assign] | None) -> bool:
    """Every use of the factory's name (`found`: the name and its assignment) is one where a
    CPU tensor is fine: an index, a loop, a comparison (astutil.only_harmless_uses)."""
    if found is None:
        return False
    target, assign = found
    return only_harmless_uses(fn, lambda n: isinstance(n, ast.Name) and n.id == target, assign)


def moved_in(body: list[ast.AST], name: str) -> bool:
    """`idx = torch.arange(n)` … `idx = idx.to(x.device)` / `.cuda()` / `idx.type_as(x)` in
    the same function: the tensor reaches the right device before it meets the model's."""
    return any(
        isinstance(sub, ast.Call)
        and isinstance(sub.func, ast.Attribute)
        and sub.func.attr in MOVING_METHODS
        and isinstance(sub.func.value, ast.Name)
        and sub.func.value.id == name
        for sub in own_nodes(body)
    )


# What a tensor's value does not flow through: its shape, dtype, device, a length.
META = frozenset(["shape", "dtype", "device", "ndim", "size", "dim", "len", "numel"])
# Reductions that, called whole (`c.sum()`), give a 0-dim tensor: fine beside any device.
REDUCING = frozenset(["sum", "mean", "prod", "norm"])


def _built_on(expr: ast.expr, node: ast.AST, name: str | None) -> bool:
    """Is `expr` the factory call, or the name it is assigned to, through method calls and
    subscripts (`torch.zeros(n).unsqueeze(0)[..., None]`)? Not through `.shape` and kin."""
    while True:
        if expr is node or (isinstance(expr, ast.Name) and expr.id == name):
            return True
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            whole = expr.func.attr in REDUCING and not expr.args and not expr.keywords
            if expr.func.attr in META or whole:
                return False
            expr = expr.func.value
        elif isinstance(expr, ast.Subscript):
            expr = expr.value
        else:
            return False


def _inputs(f: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """forward's inputs, and the names computed from them in its body (`h = self.conv(x)`)."""
    a = f.args
    out = {p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]} - {"self"}
    for stmt in sorted(own_nodes(list(f.body)), key=lambda n: getattr(n, "lineno", 0)):
        if isinstance(stmt, ast.Assign) and _reads(stmt.value, out):
            out |= {n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return out


def _reads(expr: ast.AST, names_: set[str]) -> bool:
    """Does the expression's value depend on one of the names (not only on its shape)?"""
    todo = [expr]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Attribute) and n.attr in META:
            continue
        if isinstance(n, ast.Call) and dotted(n.func).rsplit(".", 1)[-1] in META:
            continue
        if isinstance(n, ast.Name) and n.id in names_:
            return True
        todo.extend(ast.iter_child_nodes(n))
    return False


def _combinations(ctx: Context, f: ast.AST) -> list[Meet]:
    """The operands of each computation in the function whose tensors must share a device
    (scan/meets.py, as a GPU refused them); for an index, only the indexed tensor and its
    index (a CPU tensor indexed by a device one raises, the other way round does not)."""
    out = []
    for meet in meetings(ctx, f):
        if not meet.called:  # forward calls its submodules with its own tensors
            out.append(meet)
    return out


def _meets_input(
    ctx: Context, node: ast.Call, found: tuple[str, ast.Assign] | None, scalar: bool = False
) -> bool:
    """Is the factory's result combined with forward's inputs in one computation (`x +
    torch.randn(n)`, `torch.cat([h, torch.zeros(b, 1)])`, directly or through the name it is
    assigned to)? That is the crash on a GPU. A factory that meets no input (an index, a
    shape, a mask or a placeholder built on the host) was never one in sixteen blind corpora:
    all seven shown by default were lookalikes (yolov7's ONNX NMS stand-ins, dino's crop
    counts, vit-pytorch's batch index)."""
    f = ctx.func
    if f is None:
        return False
    target = found[0] if found else None

    def ours(e: ast.expr) -> bool:
        return _built_on(e, node, target)

    key = f"td302:{id(f.node)}"
    if key not in ctx.memo:  # once per forward, however many factories it holds
        ctx.memo[key] = (_inputs(f.node), list(_combinations(ctx, f.node)))
    inputs, combinations = ctx.memo[key]
    inputs = inputs - {target}
    for meet in combinations:
        sides = meet.sides
        if (scalar and not meet.bounds) or not any(ours(s) for s in sides):
            continue  # a 0-dim tensor meets any device, except as clamp's bound
        if meet.indexed and not ours(sides[0]):
            continue  # `x[torch.arange(n)]`: a CPU index into the input is fine
        if any(not ours(s) and _reads(s, inputs) for s in sides):
            return True
    return False


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
    if _compared_with_numbers(ctx, node):
        return
    found = _assigned_to(f.node, node)  # the name the factory's result is kept in, if any
    if is_scalar_factory(func.attr, node):
        if _meets_input(ctx, node, found, scalar=True):  # `x.clamp(min=torch.tensor(0.0))`
            _report(ctx, node, func, meets=True)
        return
    if isinstance(ctx.parents.get(id(node)), ast.Subscript):
        return  # `x[torch.arange(b), idx]`: CPU indices work on tensors on any device
    if ctx.then.get(id(node)) == "cpu":
        return  # `torch.zeros(…).cpu()`: put on the CPU on purpose (Real-Time-Voice-Cloning)
    if (found and moved_in(list(f.node.body), found[0])) or _position_table(ctx):
        return
    meets = _meets_input(ctx, node, found)
    if not meets and _harmless_uses(f.node, found):
        return  # an index, a loop, a comparison with no input: fine on the CPU
    _report(ctx, node, func, meets)


def _report(ctx: Context, node: ast.Call, func: ast.Attribute, meets: bool) -> None:
    hint = f"{dotted(func)}(…, device=x.device) for an input x"
    if func.attr in LIKE_FACTORIES:
        hint += f", or torch.{func.attr}_like(x)"
    ctx.report(
        "TD302",
        node,
        f"`{dotted(func)}(…)` in `forward` makes a CPU tensor whatever the model's device",
        hint,
        confidence="medium" if meets else "low",
        why=None if meets else "its result meets none of forward's inputs in this function",
    )


CHECK = Check(
    rules=("TD302",),
    attrs=FORWARD_FACTORIES,
    calls=FORWARD_FACTORIES,
    on_call=on_call,
)
