"""TD301: a tensor stored as a plain `nn.Module` attribute in `__init__`."""

from __future__ import annotations

import ast
import re

from ..astutil import chain, dotted, is_empty_shape, is_number, only_harmless_uses
from ..context import Check, Class, Context

# Factories that make a tensor in `__init__`.
TENSOR_FACTORIES = frozenset([
    "zeros", "ones", "empty", "randn", "rand", "randint", "randperm", "arange", "tensor", "full",
    "eye", "linspace", "logspace", "as_tensor", "from_numpy", "normal", "Tensor", "FloatTensor",
    "LongTensor", "IntTensor", "BoolTensor", "DoubleTensor", "HalfTensor", "ByteTensor",
])  # fmt: skip


# Attributes the Lightning trainer moves to the module's device itself.
LIGHTNING_MOVES = frozenset(["example_input_array"])


def _shape_of(node: ast.expr) -> bool:
    """`u.shape[2:]`, `x.size()`: shape metadata, read back as Python ints."""
    names, _ = chain(node)
    return bool({"shape", "size"} & set(names))


def is_scalar_factory(name: str, call: ast.Call) -> bool:
    """A 0-dim tensor (`torch.tensor(0.5)`, `torch.tensor(x ** 0.5)`, `torch.rand([])`) or a
    tensor of shape metadata: it combines with tensors on any device (or is read back as ints),
    so where it lives does not matter."""
    first = call.args[0] if call.args else None
    if name in ("tensor", "as_tensor", "scalar_tensor"):
        return first is not None and (is_number(first) or _shape_of(first))
    # the shape is the first argument of zeros/rand…, the last of randint(low, high, size)
    return any(is_empty_shape(a) for a in call.args) or any(
        k.arg == "size" and is_empty_shape(k.value) for k in call.keywords
    )


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
    for method in cls.node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if method.name == "_apply":
            return True
        for sub in ast.walk(method):
            if (
                isinstance(sub, ast.Call)
                and isinstance(sub.func, ast.Attribute)
                and sub.func.attr in ("to", "cuda", "type_as")
                and _is_self_attr(chain(sub.func.value)[1], sub.func.value, attr)
            ):
                return True  # `self.mask.unsqueeze(0).to(x.device)` at the use site
            if method.name != "__init__" and isinstance(sub, (ast.Assign, ast.AugAssign)):
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                if any(dotted(t) == f"self.{attr}" for t in targets):
                    return True  # a cache rebuilt later, e.g. on the input's device
    return False


def _harmless(cls: Class, assign: ast.AST, attr: str) -> bool:
    """Never read, or read only as an index / in a comparison / iterated: a CPU tensor there
    works next to GPU tensors."""
    return only_harmless_uses(
        cls.node, lambda n: isinstance(n, ast.Attribute) and dotted(n) == f"self.{attr}", assign
    )


def _is_self_attr(root: ast.expr, expr: ast.expr, attr: str) -> bool:
    """Does the chain `expr` start at `self.<attr>`?"""
    while isinstance(expr, (ast.Call, ast.Attribute, ast.Subscript)):
        if isinstance(expr, ast.Attribute) and dotted(expr) == f"self.{attr}":
            return True
        expr = expr.func if isinstance(expr, ast.Call) else expr.value
    return False


# A module made for export (yolov7's ONNX_ORT / ONNX_TRT wrappers, thirteenth blind corpus) is
# built on the device it is exported from and traced there, never moved.
EXPORT_WRAPPER = re.compile(r"onnx|(^|_)trt|tensorrt|export", re.I)


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
    if any(k.arg in ("device", None) for k in inner.keywords) or is_scalar_factory(names[0], inner):
        return  # made on a device (`**factory_kwargs` usually carries it), or 0-dim
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for t in targets:
        if (
            isinstance(t, ast.Attribute)
            and isinstance(t.value, ast.Name)
            and t.value.id == "self"
            and t.attr not in LIGHTNING_MOVES
            and t.attr not in f.cls.registered()
            and not _moves_itself(ctx, f.cls, t.attr)
            and not _harmless(f.cls, node, t.attr)
        ):
            ctx.report(
                "TD301",
                t,
                f"`self.{t.attr}` holds a tensor that `model.to(device)` will not move",
                f'self.register_buffer("{t.attr}", …, persistent=False) or nn.Parameter(…)',
                **(
                    {"confidence": "low", "why": "a module made for export, never moved"}
                    if EXPORT_WRAPPER.search(f.cls.node.name)
                    else {"confidence": "medium"}
                ),
            )


CHECK = Check(
    rules=("TD301",),
    attrs=TENSOR_FACTORIES,
    on_assign=on_assign,
)
