"""Where two tensors meet in one computation, so that torch asks them to share a device.

Recorded on an H200 (`scripts/device_claims.py --mixes`, tests/facts/device_claims/
cuda-gpu-mixes.json): a CPU tensor beside a GPU tensor raises "Expected all tensors to be on the
same device" in arithmetic (`%` too), comparisons, in-place updates (`x += c`), the functions and
methods of MEETING, as the input of a module on the GPU (`model(c)`) and as the values stored at
tensor indices (`x[idx] = c`); a CPU tensor indexed by a GPU one raises too. It does not as an
index into the GPU tensor (`x[c]`, `x[c] = 0`), copied into it (`x[:2] = c`, `x.copy_(c)`), nor
when it is 0-dim (a scalar), except as clamp's bound (`torch.clamp(x, min=torch.tensor(0.0))`
raised)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from .astutil import own_nodes
from .context import Context

# torch functions and Tensor methods (their in-place `_` forms too) that compute with every
# tensor they are given; the ones recorded on the H200 and the same-device rule's kin.
MEETING = frozenset([
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide",
    "remainder", "fmod", "pow", "maximum", "minimum", "fmax", "fmin", "atan2", "hypot",
    "eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "isclose", "allclose",
    "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
    "equal", "where", "gather", "scatter", "scatter_add", "scatter_reduce", "index_select",
    "index_add", "index_copy", "index_fill", "masked_fill", "masked_select", "masked_scatter", "take_along_dim",
    "lerp", "addcmul", "addcdiv", "dot", "vdot", "inner", "outer", "ger", "einsum", "matmul",
    "mm", "bmm", "mv", "addmm", "baddbmm", "cdist", "cross", "dist",
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack",
    "searchsorted", "bucketize", "normal", "linear", "bilinear", "embedding",
    "conv1d", "conv2d", "conv3d", "cross_entropy", "nll_loss", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "kl_div", "cosine_similarity", "pairwise_distance", "margin_ranking_loss",
    "cosine_embedding_loss", "triplet_margin_loss",
])  # fmt: skip
CLAMPS = frozenset(["clamp", "clip", "clamp_min", "clamp_max"])
COMPARING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Eq, ast.NotEq)


@dataclass(frozen=True)
class Meet:
    """One computation: `sides` must share a device. `indexed`: sides[0] is a tensor indexed by
    the rest (only a CPU sides[0] with a device index raises). `bounds`: a clamp's bounds, where
    a 0-dim CPU tensor raises too. `called`: `model(c)`, positional inputs only (a pipeline's
    keyword `latents=` is moved by the pipeline)."""

    node: ast.AST
    sides: tuple[ast.expr, ...]
    indexed: bool = False
    bounds: bool = False
    called: bool = False  # sides[0] is called with the rest: a module on a device, its input


def _elements(arg: ast.expr) -> list[ast.expr]:
    return list(arg.elts) if isinstance(arg, (ast.List, ast.Tuple)) else [arg]


def _call_meet(ctx: Context, node: ast.Call) -> Meet | None:
    func = node.func
    torch_name = ctx.torch_call(node)
    if torch_name is not None:
        name, receiver = torch_name.rsplit(".", 1)[-1], []
    elif isinstance(func, ast.Attribute):
        name, receiver = func.attr, [func.value]
    elif isinstance(func, ast.Name):
        return Meet(node, (func, *node.args), called=True) if node.args else None
    else:
        return None
    name = name.rstrip("_")  # `x.add_(c)`, `x.masked_fill_(c, 0)`
    args = [e for a in node.args for e in _elements(a)] + [k.value for k in node.keywords]
    if name in CLAMPS:
        return Meet(node, (*receiver, *args), bounds=True)
    if name in MEETING:
        return Meet(node, (*receiver, *args))
    return None


def _tensor_index(index: ast.expr) -> bool:
    """An index that is a tensor computed here (`torch.arange(2)`, `x > 0`), not an int or a
    slice: storing a CPU tensor there is `index_put_`, which asks for one device."""
    return isinstance(index, (ast.Call, ast.Compare))


def meetings(ctx: Context, scope: ast.AST) -> list[Meet]:
    """Every computation in the function `scope` (not its nested functions) whose tensors must
    share a device, computed once per function."""
    key = f"meetings:{id(scope)}"
    got = ctx.memo.get(key)
    if got is None:
        got = list(_walk(ctx, list(scope.body)))  # type: ignore[attr-defined]
        ctx.memo[key] = got
    return got


def _walk(ctx: Context, body: list[ast.AST]) -> Iterator[Meet]:
    for n in own_nodes(body):
        if isinstance(n, ast.BinOp):
            yield Meet(n, (n.left, n.right))
        elif isinstance(n, ast.Compare) and all(isinstance(op, COMPARING) for op in n.ops):
            yield Meet(n, (n.left, *n.comparators))
        elif isinstance(n, ast.AugAssign):
            yield Meet(n, (n.target, n.value))
        elif isinstance(n, ast.Call):
            meet = _call_meet(ctx, n)
            if meet is not None:
                yield meet
        elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load):
            yield Meet(n, (n.value, *_elements(n.slice)), indexed=True)
        elif isinstance(n, ast.Assign) and len(n.targets) == 1:
            t = n.targets[0]
            if isinstance(t, ast.Subscript) and _tensor_index(t.slice):
                yield Meet(n, (t.value, n.value))
