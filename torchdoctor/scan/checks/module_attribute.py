"""TD301: a tensor stored as a plain `nn.Module` attribute in `__init__`."""

from __future__ import annotations

import ast

from ..astutil import chain, dotted, is_empty_shape, is_number
from ..context import Check, Class, Context

# Factories that make a tensor in `__init__`.
TENSOR_FACTORIES = frozenset([
    "zeros", "ones", "empty", "randn", "rand", "randint", "randperm", "arange", "tensor", "full",
    "eye", "linspace", "logspace", "as_tensor", "from_numpy", "normal", "Tensor", "FloatTensor",
    "LongTensor", "IntTensor", "BoolTensor", "DoubleTensor", "HalfTensor", "ByteTensor",
])  # fmt: skip


def is_scalar_factory(name: str, call: ast.Call) -> bool:
    """A 0-dim tensor: `torch.tensor(0.5)`, `torch.tensor(x ** 0.5)`, `torch.rand([])`. It
    combines with tensors on any device, so where it lives does not matter."""
    first = call.args[0] if call.args else None
    if name in ("tensor", "as_tensor", "scalar_tensor"):
        return first is not None and is_number(first)
    return first is not None and is_empty_shape(first)


def _moves_itself(ctx: Context, cls: Class, attr: str) -> bool:
    """The class moves the attribute on its own: it or a parent class in the file overrides
    `_apply` (what `.to()` calls), or it moves the attribute where it is used
    (`self.alpha = self.alpha.to(x.device)`)."""
    defs = ctx.class_defs()
    for base in cls.node.bases:
        parent = defs.get(dotted(base).rsplit(".", 1)[-1])
        if (
            parent is not None
            and parent is not cls.node
            and any(isinstance(s, ast.FunctionDef) and s.name == "_apply" for s in parent.body)
        ):
            return True
    for sub in ast.walk(cls.node):
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and sub.name == "_apply":
            return True
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Attribute)
            and sub.func.attr in ("to", "cuda", "type_as")
            and dotted(sub.func.value) == f"self.{attr}"
        ):
            return True
    return False


def on_assign(ctx: Context, node: ast.Assign | ast.AnnAssign) -> None:
    f = ctx.func
    if not (f and f.cls and f.cls.is_module and f.node.name == "__init__"):
        return
    value = node.value
    if not isinstance(value, ast.Call):
        return
    names, root = chain(value)
    if not (ctx.is_torch(root) and names and names[0] in TENSOR_FACTORIES):
        return
    inner = value
    while isinstance(inner.func, ast.Attribute) and isinstance(inner.func.value, ast.Call):
        inner = inner.func.value  # the factory call itself, under `.bool()`, `.float()`…
    if any(k.arg == "device" for k in inner.keywords) or is_scalar_factory(names[0], inner):
        return
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for t in targets:
        if (
            isinstance(t, ast.Attribute)
            and isinstance(t.value, ast.Name)
            and t.value.id == "self"
            and t.attr not in f.cls.registered()
            and not _moves_itself(ctx, f.cls, t.attr)
        ):
            ctx.report(
                "TD301",
                t,
                f"`self.{t.attr}` holds a tensor that `model.to(device)` will not move",
                f'self.register_buffer("{t.attr}", …, persistent=False) or nn.Parameter(…)',
            )


CHECK = Check(rules=("TD301",), words=tuple(sorted(TENSOR_FACTORIES)), on_assign=on_assign)
