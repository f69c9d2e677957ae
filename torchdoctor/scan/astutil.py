"""Small pure helpers over `ast` nodes shared by the scan checks."""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Iterator

# A name that shows the author thought about the device: guards, device-specific functions.
# "offload": moving weights between host and an accelerator presumes the accelerator; so does
# pinning host memory (`if self.pin_memory:` in lama's vendored DataLoader, twenty-first corpus).
# A flag or string naming another device kind (`args.cpu`, `use_mps`, "cpu") guards too, but
# only narrowly: CUDA code behind it is TD004 (guards.py).
# A test on the number of processes guards too: what runs only when world_size > 1 (or under
# `if args.distributed:`, after `if not is_dist_avail_and_initialized(): return`, or
# `dist.is_initialized()`) is multi-GPU training, NCCL's (demucs' distrib.py, scan_blind2;
# ml-aim's MetricLogger, twenty-first blind corpus).
# So does a TensorRT branch (`if acceleration == "tensorrt":`): TensorRT engines run on NVIDIA
# GPUs only (StreamDiffusion's wrapper.py, sixteenth blind corpus).
GUARD_WORD = re.compile(
    r"cuda|gpu|device|accelerator|is_available|offload|pin_memory|(^|_)(cpu|mps)($|_)"
    r"|world_size|(^|_)(distributed|ddp)($|_)|(^|_)dist_avail|^is_initialized$"
    r"|tensorrt|(^|_)trt($|_)",
    re.I,
)
# A CUDA device string: "cuda", "cuda:0".
CUDA_STRING = re.compile(r"cuda(:\d+)?")
DEVICE_SPECIFIC_NAME = re.compile(r"cuda|gpu|cudnn|nccl|triton|cutlass", re.I)
NO_GRAD_WORD = re.compile(r"no_grad|inference_mode")
SKIP_CALL_WORD = re.compile(r"skip|exit|abort", re.I)
# A file (or block) that imports one of these cannot run without an NVIDIA GPU anyway.
CUDA_ONLY_LIBS = frozenset(
    ["triton", "cutlass", "cuda", "pycuda", "cupy", "nvmath", "apex", "flash_attn", "tensorrt"]
)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_SCOPE_KINDS = frozenset(SCOPES)


def names(node: ast.AST) -> Iterator[str]:
    """Identifiers and string constants in an expression (for the guard heuristics)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            yield sub.id
        elif isinstance(sub, ast.Attribute):
            yield sub.attr
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield sub.value


# A test on a CPU/MPS word holds on the CPU or a Mac: what it guards when true is their code, so
# `if self.cpu_cache: x = x.cuda()` is no CUDA guard (BasicSR's BasicVSR++, seventh blind
# corpus: 7 crashes missed); its else branch, or `if not use_cpu:`, is one.
CPU_WORD = re.compile(r"(^|_)(cpu|mps)($|_)", re.I)


def device_arg(node: ast.AST) -> ast.AST:
    """What names the device: the argument of `torch.device(…)`, else the node itself."""
    if isinstance(node, ast.Call) and dotted(node.func).endswith("device") and node.args:
        return node.args[0]
    return node


def device_literal(node: ast.AST) -> str | None:
    """The device a literal names: `"cuda:0"`, `torch.device("cpu")` -> "cpu"."""
    node = device_arg(node)
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def compares(test: ast.AST, ops: tuple[type, ...], side: Callable[[ast.AST], bool]) -> bool:
    """A single comparison `a <op> b`, op one of `ops`, with either side passing `side`."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ops)
        and any(side(n) for n in (test.left, *test.comparators))
    )


def _cuda_literal(node: ast.AST) -> bool:
    return CUDA_STRING.fullmatch(device_literal(node) or "") is not None


def off_cuda_test(expr: ast.AST) -> bool:
    """`x.device != torch.device("cuda")`: true where the tensor is not on CUDA, so what it
    guards runs there, and a `.to("cuda")` under it is the crash (CompVis stable-diffusion's
    DDIMSampler.register_buffer on every Mac, third blind corpus)."""
    return compares(expr, (ast.NotEq, ast.IsNot), _cuda_literal)


_COUNT_OPS = {
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}  # fmt: skip
# `a op b` read as `b op' a`
_MIRRORED: dict[type, type] = {
    ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE, ast.Eq: ast.Eq,
    ast.NotEq: ast.NotEq,
}  # fmt: skip


def _counts_gpus(expr: ast.AST) -> bool:
    return isinstance(expr, ast.Call) and dotted(expr.func).endswith("cuda.device_count")


def without_gpu(expr: ast.AST) -> bool | None:
    """The value of a test that only counts GPUs on a machine with none (`device_count()` is
    0 there): `torch.cuda.device_count() < 2` and `not torch.cuda.device_count()` are true, so
    their body runs without CUDA; `… > 0` and `… == 1` are false, so their `else:` does.
    None for any other test, or an `and`/`or` its other parts leave open."""
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        value = without_gpu(expr.operand)
        return None if value is None else not value
    if isinstance(expr, ast.BoolOp):
        values = [without_gpu(v) for v in expr.values]
        decisive = isinstance(expr.op, ast.Or)  # True decides an `or`, False an `and`
        if decisive in values:
            return decisive
        return (not decisive) if all(v is (not decisive) for v in values) else None
    if _counts_gpus(expr):
        return False
    if not (isinstance(expr, ast.Compare) and len(expr.ops) == 1):
        return None
    left, op, right = expr.left, type(expr.ops[0]), expr.comparators[0]
    if _counts_gpus(right) and op in _MIRRORED:
        left, op, right = right, _MIRRORED[op], left
    count = right.value if isinstance(right, ast.Constant) else None
    if _counts_gpus(left) and op in _COUNT_OPS and type(count) is int:
        return bool(_COUNT_OPS[op](0, count))
    return None


def is_guard(expr: ast.AST) -> bool:
    if off_cuda_test(expr):
        return False
    counted = without_gpu(expr)
    if counted is not None:
        return not counted  # its body runs with no GPU exactly when the test holds there
    hits = [n for n in names(expr) if GUARD_WORD.search(n)]
    if any(GUARD_WORD.search(CPU_WORD.sub("", n)) for n in hits):
        return True  # a CUDA/GPU/device word besides any CPU one
    return bool(hits) and isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not)


def is_guard_else(expr: ast.AST) -> bool:
    """The same test, for the code that runs when it is false (an `else:`, or what follows an
    early `return`): a guard all the same; guards.py tells the two apart for TD004. Not where
    a GPU count sends the machines with none (`without_gpu`): the `else:` of `if
    torch.cuda.device_count() > 1:` runs on one GPU and on none (DIPPI's trainers print
    `torch.cuda.get_device_name(0)` there and raise on the CPU they fall back to, blind set
    344)."""
    counted = without_gpu(expr)
    if counted is not None:
        return counted  # `if torch.cuda.device_count() > 1: … else:` runs with none
    return any(GUARD_WORD.search(n) for n in names(expr))


def dotted(node: ast.AST) -> str:
    """`a.b.c` -> "a.b.c"; calls and subscripts end the chain (`f().x` -> "x")."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def call_name(node: ast.Call) -> str:
    """The called attribute or name: `x.cuda()` -> "cuda", `load()` -> "load"."""
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def chain(node: ast.expr) -> tuple[list[str], ast.expr]:
    """`a.b().c()` -> (['b', 'c'] outermost last, root `a`)."""
    attrs: list[str] = []
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return list(reversed(attrs)), node


def exits(stmts: list[ast.stmt]) -> bool:
    """Does this block end the enclosing flow (return/raise/continue/skip)?"""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    return (
        isinstance(last, ast.Expr)
        and isinstance(last.value, ast.Call)
        and bool(SKIP_CALL_WORD.search(dotted(last.value.func)))
    )


def imports_cuda_only(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Import):
        return any(a.name.split(".")[0] in CUDA_ONLY_LIBS for a in stmt.names)
    if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
        return stmt.module.split(".")[0] in CUDA_ONLY_LIBS
    return False


def assigned_values(scope: ast.AST, name: str) -> list[ast.expr]:
    """What `scope` assigns to the plain name `name` (`x = …`, in any of its statements)."""
    return [
        n.value
        for n in ast.walk(scope)
        if isinstance(n, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
    ]


def parent_map(scope: ast.AST) -> dict[int, ast.AST]:
    """id(node) -> its parent, for every node under `scope`."""
    return {id(child): node for node in ast.walk(scope) for child in ast.iter_child_nodes(node)}


def own_nodes(nodes: list[ast.AST]) -> Iterator[ast.AST]:
    """Nodes of one scope: nested functions, lambdas and classes are not entered."""
    # the fields read directly, not through ast.iter_child_nodes: a module's data tables
    # (torch's sparse/_triton_ops_meta.py) hold hundreds of thousands of nodes
    todo = list(nodes)
    pop, push = todo.pop, todo.append
    while todo:
        node = pop()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if value.__class__ is list:
                for child in value:
                    if isinstance(child, ast.AST) and child.__class__ not in _SCOPE_KINDS:
                        push(child)
            elif isinstance(value, ast.AST) and value.__class__ not in _SCOPE_KINDS:
                push(value)


def imported_names(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The names an import binds: `import a.b` binds `a`, `from m import x as y` binds `y`."""
    return [a.asname or a.name.split(".")[0] for a in node.names]


def bindings(scope: ast.AST, name: str) -> int:
    """How many places under `scope` bind `name`: stores (`x = …`, `for x in`, `with … as x`),
    imports (`from config import x`), and `global x` declarations (a function that may rebind
    it at any time)."""
    count = 0
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            count += 1
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            count += imported_names(node).count(name)
        elif isinstance(node, ast.Global) and name in node.names:
            count += 1
    return count


def first_stores(nodes: list[ast.AST]) -> dict[str, int]:
    """name -> the first line where this scope assigns it."""
    out: dict[str, int] = {}
    for sub in own_nodes(nodes):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            out[sub.id] = min(out.get(sub.id, sub.lineno), sub.lineno)
    return out


def is_number(node: ast.AST) -> bool:
    """A Python number or arithmetic on numbers and names (`0.5`, `x ** 0.5`, `-1`, `math.sqrt(d)`):
    something `torch.tensor` turns into a 0-dim tensor, never a list of values."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float, bool)) and node.value is not None
    if isinstance(node, ast.UnaryOp):
        return is_number(node.operand)
    if isinstance(node, ast.BinOp):  # `d ** 0.5`, `x.shape[-1] ** -0.5`: arithmetic on a number
        scalar_like = (ast.Name, ast.Attribute, ast.Subscript, ast.Call, ast.BinOp, ast.Constant)
        sides = (node.left, node.right)
        return all(isinstance(n, scalar_like) for n in sides) and any(is_number(n) for n in sides)
    if isinstance(node, ast.Call):
        return dotted(node.func).split(".")[0] in ("math", "float", "int", "abs", "min", "max")
    return False


def is_empty_shape(node: ast.AST) -> bool:
    """`[]` or `()`: the shape of a 0-dim tensor."""
    return isinstance(node, (ast.List, ast.Tuple)) and not node.elts


def _is_in_slice(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Is `node` (part of) the index of a subscript: `x[:, idx]`, `x[idx]`?"""
    child, parent = node, parents.get(id(node))
    while isinstance(parent, (ast.Tuple, ast.Slice)):
        child, parent = parent, parents.get(id(parent))
    return isinstance(parent, ast.Subscript) and parent.slice is child


def only_harmless_uses(scope: ast.AST, is_target, skip: ast.AST | None = None) -> bool:
    """Is every read of the target in `scope` one where a CPU tensor next to GPU tensors is
    fine: an index (`x[:, idx]`, CPU indices are accepted), iteration (`for w in t`, each
    element a 0-dim tensor), a comparison (`t is not None`), or no read at all? `skip`: a
    subtree not to count (the assignment itself)."""
    parents: dict[int, ast.AST] = {}
    skipped = {id(n) for n in ast.walk(skip)} if skip is not None else set()
    for parent in ast.walk(scope):
        for child in ast.iter_child_nodes(parent):
            parents[id(child)] = parent
        # `t = torch.tensor(t)` reads the old value of the name, not the tensor in question
        if isinstance(parent, ast.Assign) and any(is_target(t) for t in parent.targets):
            skipped.update(id(n) for n in ast.walk(parent.value))
    for node in ast.walk(scope):
        if (
            id(node) in skipped
            or not is_target(node)
            or isinstance(getattr(node, "ctx", None), ast.Store)
        ):
            continue
        parent = parents.get(id(node))
        if _is_in_slice(node, parents) or isinstance(parent, ast.Compare):
            continue
        if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
            continue
        if isinstance(parent, ast.Call) and dotted(parent.func) in ("zip", "enumerate", "len"):
            continue
        return False
    return True
