"""Pitfalls that crash on Apple's MPS device (the project view decides: they count only in a
project that picks MPS somewhere; elsewhere they stay `low`).

TD601: float64 on an MPS tensor. MPS has no float64: `.double()` / `.to(torch.float64)` of a
tensor placed on the device, or a factory with `dtype=torch.float64` on it, raises "TypeError:
Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64"
(pytorch/pytorch#79019, closed as a platform limit in #122602; still so in torch 2.13).

TD602: a sparse tensor moved to MPS (a sparse buffer of a module that is moved with
`model.to("mps")`, or `.to(device)` of a sparse tensor): "Could not run
'aten::_sparse_coo_tensor_with_dims_and_tensors' with arguments from the 'SparseMPS' backend"
(pytorch/pytorch#87886, #129842, #140941). Work on sparse MPS began in pytorch/pytorch#157238
(June 2025) and covers only some ops since.

TD603: an op MPS does not implement (table below, with the evidence): "NotImplementedError:
The operator 'aten::…' is not currently implemented for the MPS device"."""

from __future__ import annotations

import ast
import re

from ..astutil import assigned_values, call_name, dotted, own_nodes
from ..context import Check, Context
from .numpy_call import _on_device, _placement

FLOAT64 = re.compile(r"^(torch\.)?(float64|double|DoubleTensor)$")
SPARSE = re.compile(r"sparse_coo_tensor|sparse_csr_tensor|to_sparse|sparse\.\w*Tensor")
# op called -> (the aten op in the error, what shows it): ops real projects hit on Macs.
UNSUPPORTED = {
    "ctc_loss": ("aten::_ctc_loss", "pytorch/pytorch#153976, #160829 (torch 2.7.1)"),
    "CTCLoss": ("aten::_ctc_loss", "pytorch/pytorch#153976, #160829 (torch 2.7.1)"),
}
# Packages whose import imports torch: after one of them, torch has read its environment
TORCH_IMPORTERS = frozenset(
    ["torch", "torchvision", "torchaudio", "transformers", "diffusers", "accelerate", "timm",
     "lightning", "pytorch_lightning", "torchmetrics", "peft", "sentence_transformers"]
)  # fmt: skip
FALLBACK_VARIABLE = "PYTORCH_ENABLE_MPS_FALLBACK"
FLOAT64_MESSAGE = (
    "float64 on a tensor that may be on MPS raises 'Cannot convert a MPS Tensor to float64 "
    "dtype as the MPS framework doesn't support float64'"
)


def _is_float64(node: ast.expr) -> bool:
    return bool(FLOAT64.match(dotted(node)))


def _on_a_device(ctx: Context, expr: ast.expr) -> bool:
    placed = _placement(expr)
    if placed is None:
        root = expr
        while isinstance(root, (ast.Call, ast.Attribute, ast.Subscript)):
            root = root.func if isinstance(root, ast.Call) else root.value
        placed = isinstance(root, ast.Name) and _on_device(ctx, root.id, expr.lineno)
    return bool(placed)


def _device_of(node: ast.Call) -> ast.expr | None:
    dev = [k.value for k in node.keywords if k.arg == "device"]
    if dev:
        return dev[0]
    if call_name(node) == "to" and node.args and not _is_float64(node.args[0]):
        return node.args[0]
    return None


def _float64_dtype(node: ast.Call) -> bool:
    kw = [k.value for k in node.keywords if k.arg == "dtype"]
    positional = node.args[1:2] if call_name(node) == "to" else []
    return any(_is_float64(v) for v in [*kw, *positional])


def _not_mps(dev: ast.expr) -> bool:
    """A device that is surely not MPS: "cpu", "cuda:0", torch.device("cuda")…"""
    text = ast.unparse(dev).lower()
    return "mps" not in text and bool(re.search(r"['\"](cpu|cuda)", text))


def _kept_off_mps(ctx: Context, dev: ast.expr, at: int) -> bool:
    """`device` is set to the CPU, before line `at`, in a branch of the same function whose test
    asks whether something is on MPS (`if is_device_mps(x.device): device = torch.device("cpu")`):
    the author moves this very work off MPS (LightDiffusion-Next's Flux rope(), blind set 212).
    Not under a negated test (`if "mps" not in …`)."""
    if not isinstance(dev, ast.Name):
        return False
    scope = ctx.func.node if ctx.func is not None else ctx.module
    return any(
        isinstance(branch, ast.If)
        and (branch.end_lineno or 0) < at
        and _asks_mps(branch.test)
        and any(
            isinstance(stmt, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == dev.id for t in stmt.targets)
            and "cpu" in ast.unparse(stmt.value).lower()
            and _not_mps(stmt.value)
            for stmt in branch.body
        )
        for branch in own_nodes([scope])
    )


def _asks_mps(test: ast.expr) -> bool:
    negated = any(
        (isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not))
        or (
            isinstance(n, ast.Compare) and any(isinstance(o, (ast.NotEq, ast.NotIn)) for o in n.ops)
        )
        for n in ast.walk(test)
    )
    return not negated and "mps" in ast.unparse(test).lower()


# NumPy calls whose result is float64 unless a dtype is given (checked on NumPy 2 and torch
# 2.13: torch.from_numpy(np.linspace(0, 1, 5)).dtype is torch.float64)
NUMPY_FLOAT64 = re.compile(
    r"^(np|numpy)\.(linspace|logspace|random\.(rand|randn|uniform|normal|random)|zeros|ones|empty)$"
)  # not np.full: its dtype is its fill value's
FROM_NUMPY = frozenset(["torch.from_numpy", "torch.tensor", "torch.as_tensor"])


def _numpy_float64(ctx: Context, expr: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
    """A NumPy array of float64, by its call or (a name) by every value the scope gives it
    (`seen`: names already followed, so `a = b; b = a` ends)."""
    if isinstance(expr, ast.Name):
        if expr.id in seen:
            return False
        scope = ctx.func.node if ctx.func is not None else ctx.module
        values = assigned_values(scope, expr.id)
        return bool(values) and all(_numpy_float64(ctx, v, seen | {expr.id}) for v in values)
    return (
        isinstance(expr, ast.Call)
        and bool(NUMPY_FLOAT64.match(dotted(expr.func)))
        and not any(k.arg == "dtype" for k in expr.keywords)
    )


def _moves_numpy_float64(ctx: Context, node: ast.Call) -> bool:
    """`torch.from_numpy(np.linspace(…)).to(device)`: a float64 array, still float64 as a
    tensor, moved to the device with no dtype (kijai/ComfyUI-PyramidFlowWrapper#29: a flow
    scheduler's sigmas; blind sets 126 and 146)."""
    if call_name(node) != "to" or not isinstance(node.func, ast.Attribute):
        return False
    if any(k.arg == "dtype" for k in node.keywords) or len(node.args) > 1:
        return False
    if node.args and not _names_a_device(node.args[0]):
        return False  # `.to(torch.float32)` (the fix), `.to(other_tensor)`: no device named
    made = node.func.value
    return (
        isinstance(made, ast.Call)
        and dotted(made.func) in FROM_NUMPY
        and len(made.args) == 1
        and not any(k.arg == "dtype" for k in made.keywords)
        and _numpy_float64(ctx, made.args[0])
    )


def _names_a_device(expr: ast.expr) -> bool:
    """A device, as code writes one: "mps", torch.device(…), `device`, `self.dev`…"""
    if isinstance(expr, ast.Constant):
        return isinstance(expr.value, str)
    if isinstance(expr, ast.Call):
        return dotted(expr.func).endswith("device")
    return bool(re.search(r"(^|[._])dev(ice)?s?(_\w*)?$", dotted(expr), re.I))


def _float64(ctx: Context, node: ast.Call) -> None:
    func = node.func
    attr = func.attr if isinstance(func, ast.Attribute) else ""
    dev = _device_of(node)
    if dev is not None and not _not_mps(dev) and _moves_numpy_float64(ctx, node):
        message = FLOAT64_MESSAGE + ": a NumPy float64 array stays float64 as a tensor"
        fix = "give it a float32 dtype before it moves (torch.from_numpy(a).float().to(device))"
        explicit = "mps" in ast.unparse(dev).lower()
        ctx.report("TD601", node, message, fix, needs=None if explicit else ("mps",))
        return
    if dev is not None and _float64_dtype(node):
        if _not_mps(dev) or _kept_off_mps(ctx, dev, node.lineno):
            return
        explicit = "mps" in ast.unparse(dev).lower()
        ctx.report("TD601", node, FLOAT64_MESSAGE, _FIX, needs=None if explicit else ("mps",))
        return
    casts = attr == "double" and not node.args
    casts = casts or (attr in ("to", "type") and node.args and _is_float64(node.args[0]))
    if casts and _then_cpu(ctx, node):
        # `x.double().cpu()`: the code itself expects x on a device, and casts it there first
        # (openai/whisper's timing.py, first blind corpus; whisper#2704 on MPS).
        ctx.report(
            "TD601",
            node,
            FLOAT64_MESSAGE + ": it is cast before it leaves the device",
            "move it first, then cast: .cpu().double()",
            confidence="medium",
        )
        return
    if casts and isinstance(func, ast.Attribute) and _on_a_device(ctx, func.value):
        ctx.report("TD601", node, FLOAT64_MESSAGE, _FIX, needs=("mps",))
    elif (
        casts
        and isinstance(func, ast.Attribute)
        and _in_module_method(ctx)
        and ctx.then.get(id(node)) not in HOST_NEXT
    ):
        # a tensor of a module's forward, or of a method it calls, is on the module's device
        # (mace's MACELES.forward: `node_e0.clone().double()` on a model the project runs with
        # --device mps, ACEsuit/mace#1271, seventy-eighth blind corpus; an NSF SineGen's
        # `_f02sine`, `torch.cumsum(rad_values.double(), 1)`, in a vocoder trained on MPS)
        ctx.report(
            "TD601",
            node,
            FLOAT64_MESSAGE + ": a module's methods run on the module's device",
            _FIX,
            needs=("mps",),
        )


# What follows a cast of a host tensor: `img.to(torch.double).numpy()` (PyG's ToSLIC transform)
HOST_NEXT = frozenset(["numpy", "tolist", "item"])


def _in_module_method(ctx: Context) -> bool:
    """In a module's forward (an autograd Function's static one included), or in another of
    its methods, except the constructor (which builds on the CPU) and static or class methods
    (which are given no module)."""
    f = ctx.func
    if f is None or f.cls is None or not f.cls.is_module or f.node.name == "__init__":
        return False
    if f.node.name == "forward":
        return True
    return not any(dotted(d) in ("staticmethod", "classmethod") for d in f.node.decorator_list)


def _then_cpu(ctx: Context, node: ast.Call) -> bool:
    """Is the cast's result moved to the CPU straight away (`….double().cpu()`)?"""
    return ctx.then.get(id(node)) == "cpu"


_FIX = "use float32 on the device, or move to the CPU first (.cpu().double())"
SPARSE_MESSAGE = (
    "\"Could not run 'aten::_sparse_coo_tensor_with_dims_and_tensors' with arguments from the "
    "'SparseMPS' backend\" (no sparse MPS before the work of mid-2025, partial since)"
)
SPARSE_FIX = "keep it dense on MPS (.to_dense()), or keep the sparse part on the CPU"


def _sparse(ctx: Context, node: ast.Call) -> None:
    name = call_name(node)
    if name == "register_buffer" and len(node.args) > 1:
        value = node.args[1]
    elif name == "to" and isinstance(node.func, ast.Attribute):
        value = node.func.value
        dev = _device_of(node)
        if dev is None or _not_mps(dev):
            return
    else:
        return
    if not SPARSE.search(ast.unparse(value)):
        return
    ctx.report(
        "TD602",
        node,
        "a sparse tensor moved to MPS raises " + SPARSE_MESSAGE,
        SPARSE_FIX,
        confidence="medium",
        needs=("mps",),
    )


def _fallback_on(module: ast.Module) -> bool:
    """Does the file turn on the CPU fallback for missing MPS ops before it imports torch (or a
    package that imports it)? torch reads the variable when it is imported, so one set later
    has no effect (Visionatrix#212, InvokeAI#2508): mamba-asr-mps's train_CTC.py sets it first,
    its bench_mps.py inside a benchmark function, after `import torch` (blind set 188). Read
    from the module's own statements, in order (those of an `if` at module level included): a
    comment, a docstring or a child process's environment turns nothing on."""
    for stmt in _module_statements(module.body):
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else [stmt.module]
            if any((n or "").split(".")[0] in TORCH_IMPORTERS for n in names):
                return False
        elif _sets_fallback(stmt):
            return True
    return False


def _module_statements(body: list[ast.stmt]):
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _module_statements(stmt.body)
            yield from _module_statements(stmt.orelse)


def _sets_fallback(stmt: ast.stmt) -> bool:
    """`os.environ["PYTORCH_ENABLE_MPS_FALLBACK"] = "1"`, `os.environ.setdefault(…, "1")`,
    `os.putenv(…, "1")`: the variable, in this process, set to something other than "0"."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
        return (
            isinstance(target, ast.Subscript)
            and dotted(target.value).endswith("os.environ")
            and _is_variable(target.slice)
            and _truthy(stmt.value)
        )
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if not isinstance(call, ast.Call) or len(call.args) != 2:
        return False
    name = dotted(call.func)
    return (
        (name.endswith("os.environ.setdefault") or name.endswith("os.putenv"))
        and _is_variable(call.args[0])
        and _truthy(call.args[1])
    )


def _is_variable(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value == FALLBACK_VARIABLE


def _truthy(expr: ast.expr) -> bool:
    return not (isinstance(expr, ast.Constant) and str(expr.value).strip() in ("0", "", "False"))


def _unsupported(ctx: Context, node: ast.Call) -> None:
    name = call_name(node)
    if name not in UNSUPPORTED or _fallback_on(ctx.module):
        return
    owner = dotted(node.func).rsplit(".", 1)[0]
    if ctx.torch_call(node) is None and owner not in ("F", "nn", "functional"):
        return  # another library's ctc_loss
    op, evidence = UNSUPPORTED[name]
    ctx.report(
        "TD603",
        node,
        f"`{dotted(node.func)}` has no MPS kernel: 'The operator '{op}' is not currently "
        f"implemented for the MPS device' ({evidence})",
        "compute it on the CPU (move its inputs with .cpu()), or set PYTORCH_ENABLE_MPS_FALLBACK=1",
        confidence="medium",
        needs=("mps",),
    )


def on_call(ctx: Context, node: ast.Call) -> None:
    _float64(ctx, node)
    _sparse(ctx, node)
    _unsupported(ctx, node)


CHECK = Check(
    rules=("TD601", "TD602", "TD603"),
    words=(
        "float64",
        "DoubleTensor",
        "sparse_c",
        "to_sparse",
        "sparse.",
        "ctc_loss",
        "CTCLoss",
        "from_numpy",
    ),
    attrs=frozenset(["double"]),
    calls=frozenset(
        [
            "double",
            "to",
            "type",
            "register_buffer",
            *UNSUPPORTED,
            "zeros",
            "ones",
            "empty",
            "tensor",
            "rand",
            "randn",
            "full",
            "arange",
            "linspace",
            "as_tensor",
            "eye",
        ]
    ),
    on_call=on_call,
)
